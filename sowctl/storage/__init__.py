"""Storage: the Peewee models, opening and migrating the database, write transactions, the
classification of database failures, the guards against a failing disk or server, and the
counts kept on item rows. Only the domain core and the surfaces' composition roots use it."""
