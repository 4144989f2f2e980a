"""The foundation: typed errors, time and ids, money, budgets, secrets' masking, JSON input and
atomic files. It imports nothing of sowctl; every other layer may import it."""
