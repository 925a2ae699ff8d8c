"""The SparkApplication's main file (local:///opt/sluice/driver.py in the image)."""

import sys

from sluice.runtime.kubernetes_driver import main

sys.exit(main())
