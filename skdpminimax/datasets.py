"""Loaders for benchmark files kept in a LOCAL directory (nothing is ever downloaded).

The binary tasks are those of the AUC experiments of Yang et al. (2022, Sec. 6,
Table 3):

* ijcnn1 (LIBSVM): the 49,990 rows of the training file split 80/20 at random
  into 39,992 training and 9,998 test rows;
* MNIST and Fashion-MNIST (IDX files): the ten classes split into two groups of
  five (positive = the first group), official train/test sets, pixels scaled to
  ``[0, 1]`` then standardised.

The directory layout is the one of ``shared/data``: ``<data_dir>/ijcnn1/ijcnn1.bz2``,
``<data_dir>/mnist/train-images-idx3-ubyte.gz`` and so on. Labels are returned in
``{0, 1}`` (1 = positive).
"""

import gzip
import os
from numbers import Real
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

__all__ = [
    "PUBLIC_PIXEL_STATS",
    "default_data_dir",
    "read_idx",
    "load_ijcnn1",
    "load_mnist_binary",
]

# torchvision-style global pixel mean and std (after scaling to [0, 1]). They are
# published constants, used here as public preprocessing: no privacy cost.
PUBLIC_PIXEL_STATS = {
    "mnist": (0.1307, 0.3081),
    "fashion-mnist": (0.2860, 0.3530),
}

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def default_data_dir():
    """``$SKDPMINIMAX_DATA`` if set, else ``../shared/data`` relative to the repository root."""
    env = os.environ.get("SKDPMINIMAX_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _resolve(data_dir, *parts):
    path = Path(default_data_dir() if data_dir is None else data_dir).expanduser().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found. This loader reads local files only (it never downloads); "
            "pass data_dir or set SKDPMINIMAX_DATA. It reads the files under the names and "
            "compressions they are distributed with (LIBSVM's .bz2, the IDX .gz files)."
        )
    return path


def read_idx(path):
    """Read an IDX file (optionally gzip-compressed): big-endian header, then the array.

    Parameters
    ----------
    path : str or Path
        The file; a ``.gz`` suffix is read through gzip.

    Returns
    -------
    array : ndarray
        Shape given by the header, dtype by its type byte.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as exc:  # not gzip, or a truncated one: name the file
        if isinstance(exc, FileNotFoundError):
            raise
        kind = "gzip-compressed IDX" if opener is gzip.open else "IDX"
        raise ValueError(f"{path}: cannot be read as {kind} ({type(exc).__name__}: "
                         f"{exc}).") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number).")
    dtype, ndim = raw[2], raw[3]
    if dtype not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX type byte {dtype:#x}.")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes, {header} expected "
                         f"for {ndim} dimensions).")
    shape = tuple(int(s) for s in np.frombuffer(raw[4:header], dtype=">u4"))
    itemsize = np.dtype(_IDX_TYPES[dtype]).itemsize
    if (len(raw) - header) % itemsize:
        raise ValueError(f"{path}: {len(raw) - header} payload bytes are not a whole number "
                         f"of {itemsize}-byte values (truncated?).")
    data = np.frombuffer(raw, dtype=_IDX_TYPES[dtype], offset=header)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header shape {shape} does not match {data.size} values.")
    return data.reshape(shape)


def load_ijcnn1(data_dir=None, *, test_size=0.2, random_state=0):
    """Load ijcnn1 as in Yang et al. (2022): a random 80/20 split of the LIBSVM training file.

    Features are returned as distributed by LIBSVM (already scaled to ``[-1, 1]``
    by its maintainers, a public transformation; every row has ``||x|| <= 2``).
    The paper min-max normalises to ``[0, 1]``; with training-set minima and maxima
    that is a non-private preprocessing step, so it is not done here.

    Parameters
    ----------
    data_dir : str, Path or None, default=None
        Directory holding ``ijcnn1/ijcnn1.bz2`` (None: :func:`default_data_dir`).
    test_size : float, default=0.2
        Fraction of the rows in the test split, in ``(0, 1)``.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    X_train, X_test, y_train, y_test : ndarrays
        Dense float features (22 columns) and labels in ``{0, 1}``.
    """
    if not (isinstance(test_size, Real) and not isinstance(test_size, bool)
            and 0 < test_size < 1):
        raise ValueError(f"test_size must be a fraction in (0, 1), got {test_size!r}.")
    path = _resolve(data_dir, "ijcnn1", "ijcnn1.bz2")
    try:
        X, y = load_svmlight_file(str(path), n_features=22)
    except (OSError, ValueError) as exc:  # a corrupt archive or file: say which
        raise ValueError(f"{path}: not a readable LIBSVM file ({exc}).") from exc
    X = X.toarray()
    y = (y > 0).astype(int)
    order = np.random.default_rng(random_state).permutation(X.shape[0])
    n_test = int(round(test_size * X.shape[0]))
    test, train = order[:n_test], order[n_test:]
    return X[train], X[test], y[train], y[test]


def load_mnist_binary(data_dir=None, name="mnist", *, positive_classes=None, standardize="public",
                      random_state=0):
    """MNIST or Fashion-MNIST as a binary task: ten classes split into two groups of five.

    Parameters
    ----------
    data_dir : str, Path or None, default=None
        Directory holding ``<name>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz``.
    name : {"mnist", "fashion-mnist"}, default="mnist"
        Which data set.
    positive_classes : sequence of int or None, default=None
        Classes of the positive group (a non-empty proper subset of 0..9). None: five
        classes drawn at random with ``random_state`` (the paper's partition is not
        published).
    standardize : {"public", "train", None}, default="public"
        After scaling pixels to ``[0, 1]``: ``"public"`` subtracts and divides by the
        published global constants :data:`PUBLIC_PIXEL_STATS` (no privacy cost);
        ``"train"`` uses the per-pixel mean and std of the training images, which
        is what "standardised by the mean and standard deviation" may mean in the
        paper but is a **non-private** preprocessing step (it reads the private
        training set); None keeps ``[0, 1]``.
    random_state : int, default=0
        Seed of the drawn ``positive_classes`` (unused when they are given).

    Returns
    -------
    X_train, X_test, y_train, y_test : ndarrays
        ``(60000, 784)`` / ``(10000, 784)`` float features, labels in ``{0, 1}``.
    """
    if name not in PUBLIC_PIXEL_STATS:
        raise ValueError(f"name must be one of {sorted(PUBLIC_PIXEL_STATS)}, got {name!r}.")
    if standardize not in ("public", "train", None):
        raise ValueError(f"standardize must be 'public', 'train' or None, got {standardize!r}.")
    if positive_classes is None:
        positive_classes = np.random.default_rng(random_state).permutation(10)[:5]
    positive_classes = np.unique(np.asarray(positive_classes))
    if not (positive_classes.ndim == 1 and 0 < positive_classes.size < 10
            and np.all(np.isin(positive_classes, np.arange(10)))):
        raise ValueError("positive_classes must be a non-empty proper subset of the classes "
                         f"0..9, got {positive_classes.tolist()}.")

    def part(prefix):
        images_path = _resolve(data_dir, name, f"{prefix}-images-idx3-ubyte.gz")
        labels_path = _resolve(data_dir, name, f"{prefix}-labels-idx1-ubyte.gz")
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
            raise ValueError(f"{images_path} and {labels_path} do not match: images of shape "
                             f"{images.shape} (n, rows, columns expected), labels of shape "
                             f"{labels.shape} (n expected).")
        X = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0
        return X, np.isin(labels, positive_classes).astype(int)

    X_train, y_train = part("train")
    X_test, y_test = part("t10k")
    if X_train.shape[1] != X_test.shape[1]:
        raise ValueError(f"{name}: training images have {X_train.shape[1]} pixels, test images "
                         f"{X_test.shape[1]}.")
    if standardize == "public":
        mean, std = PUBLIC_PIXEL_STATS[name]
    elif standardize == "train":
        mean = X_train.mean(axis=0)
        std = X_train.std(axis=0)
        std = np.where(std > 0, std, 1.0)
    if standardize is not None:
        X_train = (X_train - mean) / std
        X_test = (X_test - mean) / std
    return X_train, X_test, y_train, y_test
