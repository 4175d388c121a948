"""Pieces every trainer shares: the run folder (crash-safe outputs and resume)."""

from trainers.common.atomic import DiskFullError
from trainers.common.rundir import RunDir, RunFolderError

__all__ = ["DiskFullError", "RunDir", "RunFolderError"]
