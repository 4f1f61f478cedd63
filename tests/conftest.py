import os
import sys

# Tests import the package from the checkout even without an install.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
