"""attngeom: the geometry of attention in trained transformers, from Python.

A pure-Python package over libattngeom.so (ctypes; nothing to compile):
matrix_metrics on numpy arrays, Model for Hugging Face model folders, layer
for one attention layer from named tensors, aggregate and compare for
corpus statistics, plot for figures. Values are those of the attngeom
command line to the last bit. docs/python.md is the manual.
"""

from ._info import info
from ._lib import Error, METRIC_NAMES, version as _version
from ._layer import layer
from ._lens import normalize
from ._matrix import matrix_metrics
from ._model import Model
from ._plot import plot
from ._stats import aggregate, compare



def _package_version():
    try:
        from importlib.metadata import version
        return version("attngeom")
    except Exception:  # not installed: run from the source tree
        return "unknown"


# ag_version() of the library when it has one, else the package's own.
__version__ = _version() or _package_version()
metric_names = list(METRIC_NAMES)

__all__ = ["Error", "Model", "aggregate", "compare", "info", "layer", "matrix_metrics",
           "metric_names", "normalize", "plot", "__version__"]
