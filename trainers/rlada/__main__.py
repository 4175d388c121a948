import sys

from trainers.rlada.train import main

sys.exit(main())
