"""sowctl: command-line client and local server for the Project Delivery Service API."""

__version__ = "0.1.0"
