"""The catalog's assets: `message_catalog`, the message assets' specs, and what a catalog
run keeps for the code location's loads."""
