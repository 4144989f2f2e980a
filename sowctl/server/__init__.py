"""The HTTP server: a Bottle app built from the operation registry (see ``app.create_app``)."""
