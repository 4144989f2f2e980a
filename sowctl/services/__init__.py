"""The domain core: every business rule lives in these modules, over Peewee."""
