"""Web archives made by any tool, read back: ``tse import``."""
