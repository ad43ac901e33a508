"""Two level-3 BLAS calls that release the GIL: TRMM and SYRK on C-ordered rows.

A pure numpy/scipy module. scipy's own wrappers (``scipy.linalg.blas``) hold
the GIL for the whole call, so two Python threads that each multiply a chunk
of rows by a triangle run one after the other (a thread spinning on the GIL
never runs during their ``strmm``, while it runs during numpy's ``A.T @ A``).
The same routines are reached here through the C function pointers that
``scipy.linalg.cython_blas`` exports (its ``__pyx_capi__`` capsules, the route
numba takes), called by ``ctypes``, which drops the GIL around foreign calls.
They are the BLAS that scipy is linked against, whichever it is; its Cython
interface uses 32-bit integers.

The threads that call them choose the parallelism: callers hold the BLAS at
one thread meanwhile (:func:`skquad._foundation._threads.blas_limits`).
"""

import ctypes

import numpy as np

__all__ = ["gram_update", "upper_product_in_place"]

_TYPES = {np.dtype(np.float32): ("s", ctypes.c_float), np.dtype(np.float64): ("d", ctypes.c_double)}
_routines = {}


def _routine(name, ctype):
    """The ctypes function of ``scipy.linalg.cython_blas``'s ``name`` (built once)."""
    if name not in _routines:
        from scipy.linalg import cython_blas

        capsule = cython_blas.__pyx_capi__[name]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype = ctypes.c_void_p
        get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        address = get_pointer(capsule, get_name(capsule))
        char, integer, number = ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctype)
        if name.endswith("trmm"):
            # side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb
            arguments = [char] * 4 + [integer, integer, number, ctypes.c_void_p, integer,
                                      ctypes.c_void_p, integer]
        else:
            # uplo, trans, n, k, alpha, a, lda, beta, c, ldc
            arguments = [char, char, integer, integer, number, ctypes.c_void_p, integer,
                         number, ctypes.c_void_p, integer]
        _routines[name] = ctypes.CFUNCTYPE(None, *arguments)(address)
    return _routines[name]


def _check_rows(rows, n_features, what):
    if rows.ndim != 2 or rows.shape[1] != n_features or rows.dtype not in _TYPES or (
        rows.strides[1] != rows.itemsize and n_features > 1
    ) or (rows.strides[0] != n_features * rows.itemsize and rows.shape[0] > 1):
        raise ValueError(f"{what}: expected C-contiguous float rows of width {n_features}")


def upper_product_in_place(upper, rows):
    """``rows[:] = rows @ triu(upper)``: one TRMM, the GIL released.

    Parameters
    ----------
    upper : ndarray of shape (d, d), C-contiguous
        Only its upper triangle (diagonal included) is read.
    rows : ndarray of shape (m, d), C-contiguous, ``upper``'s dtype
        Overwritten with the product.
    """
    d = upper.shape[0]
    _check_rows(rows, d, "rows")
    if upper.dtype != rows.dtype or not upper.flags.c_contiguous:
        raise ValueError("upper: expected a C-contiguous matrix of the rows' dtype")
    if rows.shape[0] == 0:
        return rows
    letter, ctype = _TYPES[rows.dtype]
    # Column-major, the rows are R^T (d x m) and the upper triangle's buffer is
    # its transpose, a lower triangle L: R^T <- L R^T = (R U)^T.
    _routine(letter + "trmm", ctype)(
        b"L", b"L", b"N", b"N", ctypes.c_int(d), ctypes.c_int(rows.shape[0]),
        ctypes.byref(ctype(1.0)), upper.ctypes.data, ctypes.c_int(d),
        rows.ctypes.data, ctypes.c_int(d),
    )
    return rows


def gram_update(out, rows, alpha=1.0):
    """``out += alpha * rows^T rows`` on the upper triangle of ``out``: one SYRK, the GIL released.

    The strictly lower triangle of ``out`` is left as it was: symmetrise
    once after the last update (half the flops of a GEMM per update).

    Parameters
    ----------
    out : ndarray of shape (d, d), C-contiguous
    rows : ndarray of shape (m, d), C-contiguous rows, ``out``'s dtype
    alpha : float, default=1.0
    """
    d = out.shape[0]
    _check_rows(rows, d, "rows")
    if out.dtype != rows.dtype or not out.flags.c_contiguous or out.shape != (d, d):
        raise ValueError("out: expected a C-contiguous square matrix of the rows' dtype")
    if rows.shape[0] == 0:
        return out
    letter, ctype = _TYPES[rows.dtype]
    # Column-major: A = R^T (d x m), C = out^T; C <- alpha A A^T + C on C's
    # lower triangle, which is out's upper one.
    _routine(letter + "syrk", ctype)(
        b"L", b"N", ctypes.c_int(d), ctypes.c_int(rows.shape[0]), ctypes.byref(ctype(alpha)),
        rows.ctypes.data, ctypes.c_int(d), ctypes.byref(ctype(1.0)), out.ctypes.data,
        ctypes.c_int(d),
    )
    return out
