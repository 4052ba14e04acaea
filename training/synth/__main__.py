"""``python -m training.synth``: the same as ``sim-web synth``."""

import sys

from training.synth.cli import main

sys.exit(main())
