"""Pydantic models: the single source of truth for validation, shapes and OpenAPI."""
