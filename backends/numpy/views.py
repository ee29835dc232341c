"""Views of one buffer under another type and shape, and views as numbers (recipes).

DirectML connects tensors by bytes: a node may read an IR tensor as another same-width type,
rank or element size (``dmlgraph.dml.binding``). ``reform`` gives that view without a copy, or
None when the bytes are not laid out so one exists (a tensor placed inside a JOIN's output is
strided). A ``Recipe`` records a view as offset, shape, strides and dtype relative to its root
buffer, so a plan compiled once can rebuild it over the buffer a run binds, in a microsecond.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def as_bytes(array: np.ndarray) -> np.ndarray:
    """The array's bytes, without a copy: shape ``array.shape + (itemsize,)`` of uint8."""
    return array[..., None].view(np.uint8)


def reform(array: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray | None:
    """The same bytes, in row-major order, as ``dtype`` elements of ``shape``; None when that
    needs a copy (or the byte counts differ)."""
    dtype = np.dtype(dtype)
    data = as_bytes(array)
    count = dtype.itemsize
    for d in shape:
        count *= d
    if count != data.size:
        return None
    view = _reshaped(data, tuple(shape) + (dtype.itemsize,))
    if view is None or (dtype.itemsize > 1 and view.strides[-1] != 1):
        return None  # an element's bytes apart (every other byte of a uint8 array as uint16)
    return view.view(dtype)[..., 0]


#: NumPy 2.1 gave ``reshape`` a ``copy`` argument; 2.5 deprecates setting ``shape``, the way
#: to the same answer before it.
_RESHAPE_TAKES_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def _reshaped(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """The array as ``shape`` without a copy; None where that needs one."""
    if _RESHAPE_TAKES_COPY:
        try:
            return array.reshape(shape, copy=False)
        except ValueError:
            return None
    view = array.view()
    try:
        view.shape = shape
    except AttributeError:
        return None
    return view


def _interface_address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


_native_address: Callable[[np.ndarray], int] | None
try:  # the native copier's look-up, where built: a plan asks for every buffer every run
    from backends.numpy._copies import address as _native_address
except ImportError:
    _native_address = None


def address(array: np.ndarray) -> int:
    """Where element 0 of ``array`` lies."""
    if _native_address is not None:
        return _native_address(array)
    return _interface_address(array)


@dataclass(frozen=True)
class Recipe:
    """A view as numbers: its element 0 at ``offset`` bytes into the root buffer."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype

    @classmethod
    def of(cls, view: np.ndarray, root: np.ndarray) -> Recipe:
        return cls(address(view) - address(root), view.shape, view.strides, view.dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def on(self, root: np.ndarray) -> np.ndarray:
        """The view over ``root`` (a flat uint8 buffer at least as long as the one it was
        recorded on); read-only when ``root`` is."""
        return np.ndarray(self.shape, self.dtype, root, self.offset, self.strides)
