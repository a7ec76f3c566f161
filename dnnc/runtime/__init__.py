"""What runs compiled programs: input signatures and their checks. Imports nothing
from the compiler, so a deployed program needs only this package."""
