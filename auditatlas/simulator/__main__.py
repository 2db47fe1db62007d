"""`python -m auditatlas.simulator`: solve every backbone's calibration and rewrite the shipped
file (after a change to the model, the published tables or the action vocabulary)."""
from .model import write_calibration_file

print(f"wrote {write_calibration_file()}")
