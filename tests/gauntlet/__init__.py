"""The reliability gauntlet (run.py): a script, and a module test_gauntlet.py imports."""
