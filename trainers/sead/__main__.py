import sys

from trainers.sead.train import main

sys.exit(main())
