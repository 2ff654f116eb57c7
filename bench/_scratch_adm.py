import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from raw_asgi import app as raw
from mcpcore.transports.admission import Admission, AdmissionLimits
timed = Admission(raw)
untimed = Admission(raw, AdmissionLimits(body_timeout=None))
