"""The Flask dashboard. It reads the controller's state and sends it commands; it never
touches hardware directly."""
