"""What a skquad model's skops file may hold: the exact types to trust.

:func:`skops.io.get_untrusted_types` lists the types of a file that skops does
not trust by default. Trust them only when every one is in
:func:`trusted_types` (see the user guide's persistence page): a name outside
it, a skquad function included, means the file is not a model skquad saved.
"""

__all__ = ["trusted_types"]

# Beyond the estimator classes: the stored relaxed solution of the SDP
# estimators (numpy arrays), which resample and warm starts use, and the lifted
# statistics that a Dask fit keeps for resample.
_STATE_TYPES = ("skquad.convex.solution.SDPSolution", "skquad.convex.statistics.LiftedStatistics")


def trusted_types():
    """The names of the types a skquad estimator's skops file may hold beyond skops' defaults.

    Every public estimator class (by the module that defines it, as skops
    names it), :class:`skquad.convex.SDPSolution` and
    :class:`skquad.convex.LiftedStatistics`. A file saved from a
    skquad estimator, fitted or not, asks skops to trust a subset of these.

    Returns
    -------
    names : list of str
        Sorted fully qualified type names.

    Examples
    --------
    >>> import skops.io as sio
    >>> from skquad import QuadraticRegression
    >>> from skquad.persistence import trusted_types
    >>> model = QuadraticRegression().fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 4.0])
    >>> data = sio.dumps(model)
    >>> untrusted = sio.get_untrusted_types(data=data)
    >>> set(untrusted) <= set(trusted_types())
    True
    >>> model = sio.loads(data, trusted=untrusted)
    """
    import skquad

    classes = (getattr(skquad, name) for name in skquad.__all__)
    return sorted({f"{cls.__module__}.{cls.__qualname__}" for cls in classes}.union(_STATE_TYPES))
