"""Op-database entries: view ops (issue 3). Loaded after opdb.py, whose registry it extends."""
import importlib
import sys

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')
