"""Importers of other simulators' configs: MQSim's ssdconfig.xml and workload.xml
(:func:`import_mqsim`), SimpleSSD's .cfg (:func:`import_simplessd`); see docs/import.md."""

from .common import Imported, ImportInputError, write_imported
from .mqsim import import_mqsim
from .simplessd import import_simplessd

__all__ = ["Imported", "ImportInputError", "import_mqsim", "import_simplessd", "write_imported"]
