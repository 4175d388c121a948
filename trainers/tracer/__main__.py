import sys

from trainers.tracer.train import main

sys.exit(main())
