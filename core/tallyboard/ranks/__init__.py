"""Ranks: which process of a job this is (without importing torch), and values reduced across
ranks in one collective."""
