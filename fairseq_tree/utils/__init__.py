"""Small helpers every layer may use: devices, progress reporting. Imports nothing else of the package."""
