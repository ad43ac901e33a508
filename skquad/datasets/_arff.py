"""A small, tolerant reader for Weka's ARFF format (dense files).

``scipy.io.arff`` rejects files that real UCI collections contain (space-padded
numbers as in pendigits, quoted attribute names with spaces, comments inside
the data section), and ``liac-arff`` is not a dependency. This reader covers
the dense ARFF grammar: ``@relation``, ``@attribute`` (numeric, real, integer,
nominal ``{...}``, string and date), ``@data``, ``%`` comments, single or
double quoted tokens with backslash escapes, ``?`` for missing values, padding
around values, and any line endings. Sparse rows (``{0 1, 3 2}``) are rejected
with a clear error.
"""

import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ArffAttribute", "ArffData", "read_arff", "split_arff_values"]

_NUMERIC_TYPES = {"numeric", "real", "integer"}

# One value of a comma-separated list: a single- or double-quoted token (with
# backslash escapes) or a bare token running to the next separator.
_TOKEN = re.compile(
    r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([^,]*?))\s*(?:(,)|$)""",
    re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass
class ArffAttribute:
    """One ``@attribute`` declaration.

    Attributes
    ----------
    name : str
    kind : {"numeric", "nominal", "string", "date"}
    values : list of str
        The declared categories of a nominal attribute, in declaration order.
    """

    name: str
    kind: str
    values: list = field(default_factory=list)


@dataclass
class ArffData:
    """The parsed content of an ARFF file.

    Attributes
    ----------
    relation : str
    attributes : list of ArffAttribute
    columns : list of ndarray
        One array per attribute: float64 with NaN for missing numeric values,
        object (str, NaN for missing) for the other kinds.
    comments : str
        The ``%`` comment lines of the header, without the ``%``.
    """

    relation: str
    attributes: list
    columns: list
    comments: str


def _unescape(token):
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), token)


def split_arff_values(text):
    """Split a comma-separated ARFF list into stripped, unquoted tokens.

    Parameters
    ----------
    text : str
        A data row or the inside of a nominal declaration ``{...}``.

    Returns
    -------
    tokens : list of (str, bool)
        Each token and whether it was quoted (a quoted ``'?'`` is a value,
        a bare ``?`` is a missing value).
    """
    if "'" not in text and '"' not in text:
        # The common case, and the fast one: no quoting to honour.
        return [(token.strip(), False) for token in text.split(",")]
    tokens = []
    position = 0
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"cannot split ARFF values (unbalanced quotes?): {text[:80]!r}")
        single, double, bare, separator = match.groups()
        if single is not None:
            tokens.append((_unescape(single), True))
        elif double is not None:
            tokens.append((_unescape(double), True))
        else:
            tokens.append((bare.strip(), False))
        if separator is None:
            return tokens
        position = match.end()


def _parse_attribute(line, path, line_number):
    rest = line[len("@attribute"):].strip()
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        match = re.match(rf"{quote}((?:[^{quote}\\]|\\.)*){quote}\s*(.*)$", rest, re.DOTALL)
        if match is None:
            raise ValueError(f"{path}, line {line_number}: unterminated quoted attribute name.")
        name, spec = _unescape(match.group(1)), match.group(2).strip()
    else:
        # The name ends at the first blank or at a nominal list glued to it
        # ("@attribute colour{red,blue}").
        match = re.match(r"([^\s{]+)\s*(.*)$", rest, re.DOTALL)
        if match is None or not match.group(2):
            raise ValueError(f"{path}, line {line_number}: attribute without a type: {line!r}.")
        name, spec = match.group(1), match.group(2).strip()
    if spec.startswith("{"):
        if not spec.endswith("}"):
            raise ValueError(f"{path}, line {line_number}: unterminated nominal list: {line!r}.")
        values = [token for token, _ in split_arff_values(spec[1:-1])]
        return ArffAttribute(name, "nominal", values)
    kind = spec.split()[0].lower()
    if kind in _NUMERIC_TYPES:
        return ArffAttribute(name, "numeric")
    if kind in ("string", "date"):
        return ArffAttribute(name, kind)
    raise ValueError(
        f"{path}, line {line_number}: unsupported attribute type {spec!r} for "
        f"attribute {name!r} (supported: numeric, real, integer, nominal, string, date)."
    )


def read_arff(path):
    """Read a dense ARFF file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    data : ArffData
    """
    with open(path, encoding="utf-8", errors="replace", newline=None) as handle:
        lines = handle.read().splitlines()

    relation, attributes, comments = "", [], []
    data_start = None
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("%"):
            comments.append(line[1:].rstrip())
            continue
        keyword = line.split(None, 1)[0].lower()
        if keyword == "@relation":
            parts = line.split(None, 1)
            relation = parts[1].strip().strip("'\"") if len(parts) > 1 else ""
        elif keyword.startswith("@attribute"):
            attributes.append(_parse_attribute(line, path, index + 1))
        elif keyword == "@data":
            data_start = index + 1
            break
        else:
            raise ValueError(f"{path}, line {index + 1}: unexpected header line {line!r}.")
    if data_start is None or not attributes:
        raise ValueError(f"{path} is not an ARFF file: no @attribute/@data section found.")

    n_attributes = len(attributes)
    rows = []
    for index in range(data_start, len(lines)):
        line = lines[index].strip()
        if not line or line.startswith("%"):
            continue
        if line.startswith("{"):
            raise ValueError(
                f"{path}, line {index + 1}: sparse ARFF rows are not supported; "
                "convert the file to dense ARFF or CSV."
            )
        tokens = split_arff_values(line)
        if len(tokens) != n_attributes:
            raise ValueError(
                f"{path}, line {index + 1}: expected {n_attributes} values, "
                f"found {len(tokens)}: {line[:80]!r}."
            )
        rows.append(tokens)

    columns = []
    for position, attribute in enumerate(attributes):
        tokens = [row[position] for row in rows]
        columns.append(_convert_column(tokens, attribute, path))
    return ArffData(relation, attributes, columns, "\n".join(comments))


def _convert_column(tokens, attribute, path):
    # A bare "?" (or an empty field) is missing; a quoted '?' is a value.
    missing = [not quoted and token in ("?", "") for token, quoted in tokens]
    if attribute.kind == "numeric":
        values = np.empty(len(tokens), dtype=np.float64)
        for i, ((token, _), is_missing) in enumerate(zip(tokens, missing)):
            if is_missing:
                values[i] = np.nan
                continue
            try:
                values[i] = float(token)
            except ValueError:
                raise ValueError(
                    f"{path}: attribute {attribute.name!r} is numeric but data row "
                    f"{i + 1} holds {token!r}."
                ) from None
        return values
    values = np.empty(len(tokens), dtype=object)
    declared = set(attribute.values) if attribute.kind == "nominal" else None
    for i, ((token, _), is_missing) in enumerate(zip(tokens, missing)):
        if is_missing:
            values[i] = np.nan
        elif declared is not None and token not in declared:
            raise ValueError(
                f"{path}: data row {i + 1} holds {token!r} for nominal attribute "
                f"{attribute.name!r}, which declares only {attribute.values}."
            )
        else:
            values[i] = token
    return values
