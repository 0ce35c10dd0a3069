"""Local dataset loaders, on tiny files written by the tests (never the real data)."""

import bz2
import gzip
import struct

import numpy as np
import pytest

from skdpminimax.datasets import (
    PUBLIC_PIXEL_STATS,
    default_data_dir,
    load_ijcnn1,
    load_mnist_binary,
    read_idx,
)


def _write_idx(path, array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def mnist_dir(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "mnist"
    folder.mkdir()
    sets = {}
    for prefix, n in (("train", 20), ("t10k", 10)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = np.arange(n, dtype=np.uint8) % 10
        _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)
        sets[prefix] = (images, labels)
    return tmp_path, sets


def test_read_idx_roundtrip(tmp_path):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx(tmp_path / "a.gz", array)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), array)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(ValueError, match="magic"):
        read_idx(tmp_path / "bad")


def test_read_idx_names_the_file_it_cannot_read(tmp_path):
    # A review: a non-gzip .gz, a truncated gzip and a payload of the wrong length gave
    # BadGzipFile / EOFError / numpy's buffer error, none naming the file.
    (tmp_path / "plain.gz").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x02ab")
    whole = gzip.compress(struct.pack(">BBBBI", 0, 0, 0x08, 1, 2) + b"ab")
    (tmp_path / "cut.gz").write_bytes(whole[:-6])
    (tmp_path / "odd").write_bytes(struct.pack(">BBBBI", 0, 0, 0x0D, 1, 2) + b"\x00" * 7)
    for name in ("plain.gz", "cut.gz", "odd"):
        with pytest.raises(ValueError, match=name):
            read_idx(tmp_path / name)


def test_mnist_binary_groups_and_scaling(mnist_dir):
    root, sets = mnist_dir
    X_tr, X_te, y_tr, y_te = load_mnist_binary(root, "mnist", positive_classes=[0, 2, 4, 6, 8],
                                               standardize=None)
    assert X_tr.shape == (20, 784) and X_te.shape == (10, 784)
    np.testing.assert_allclose(X_tr, sets["train"][0].reshape(20, -1) / 255.0)
    np.testing.assert_array_equal(y_tr, (sets["train"][1] % 2 == 0).astype(int))
    mean, std = PUBLIC_PIXEL_STATS["mnist"]
    X_pub = load_mnist_binary(root, "mnist", positive_classes=[0, 2, 4, 6, 8])[1]
    np.testing.assert_allclose(X_pub, (X_te - mean) / std)
    X_train_std = load_mnist_binary(root, standardize="train", positive_classes=[1])[0]
    np.testing.assert_allclose(X_train_std.mean(axis=0), 0.0, atol=1e-12)
    # Random partition: five classes, reproducible from the seed.
    y_a = load_mnist_binary(root, random_state=3)[2]
    y_b = load_mnist_binary(root, random_state=3)[2]
    np.testing.assert_array_equal(y_a, y_b)
    assert y_a.sum() == 10  # labels 0..9 twice, five of them positive


def test_ijcnn1_split(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "ijcnn1"
    folder.mkdir()
    X = np.round(rng.uniform(-1, 1, size=(50, 22)), 3)
    y = np.where(rng.random(50) < 0.2, 1, -1)
    lines = [f"{yi} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row) if v != 0)
             for yi, row in zip(y, X)]
    with bz2.open(folder / "ijcnn1.bz2", "wt") as f:
        f.write("\n".join(lines) + "\n")
    X_tr, X_te, y_tr, y_te = load_ijcnn1(tmp_path, random_state=0)
    assert X_tr.shape == (40, 22) and X_te.shape == (10, 22)
    assert set(np.unique(np.concatenate([y_tr, y_te]))) <= {0, 1}
    # The split is a partition of the file's rows, labels kept with their rows.
    rows = {tuple(r): int(l > 0) for r, l in zip(X, y)}
    for Xs, ys in ((X_tr, y_tr), (X_te, y_te)):
        for r, l in zip(Xs, ys):
            assert rows[tuple(r)] == l
    assert len({tuple(r) for r in np.vstack([X_tr, X_te])}) == len(rows)


def test_missing_files_never_download(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="never downloads"):
        load_ijcnn1(tmp_path)
    monkeypatch.setenv("SKDPMINIMAX_DATA", str(tmp_path))
    assert default_data_dir() == tmp_path
    with pytest.raises(FileNotFoundError):
        load_mnist_binary(None, "fashion-mnist")


def test_a_home_relative_data_dir_is_expanded(mnist_dir, monkeypatch):
    root, _ = mnist_dir
    monkeypatch.setenv("HOME", str(root.parent))
    X_train, X_test, y_train, y_test = load_mnist_binary(f"~/{root.name}")
    assert X_train.shape == (20, 784) and len(y_test) == 10
    monkeypatch.setenv("SKDPMINIMAX_DATA", f"~/{root.name}")
    assert default_data_dir() == root


def test_mismatched_or_truncated_files_are_refused(mnist_dir, tmp_path):
    """A user-style probe: images and labels of other lengths or shapes were returned
    misaligned, and a truncated header raised numpy's buffer error."""
    data_dir, _ = mnist_dir
    folder = data_dir / "mnist"
    _write_idx(folder / "train-labels-idx1-ubyte.gz", np.arange(30, dtype=np.uint8) % 10)
    with pytest.raises(ValueError, match="do not match"):
        load_mnist_binary(data_dir, positive_classes=[0, 1, 2, 3, 4])
    _write_idx(folder / "train-labels-idx1-ubyte.gz", np.arange(20, dtype=np.uint8) % 10)
    _write_idx(folder / "train-images-idx3-ubyte.gz", np.zeros((20, 10, 10), np.uint8))
    with pytest.raises(ValueError, match="training images have 100 pixels, test images 784"):
        load_mnist_binary(data_dir, positive_classes=[0, 1, 2, 3, 4])
    short = tmp_path / "short.gz"
    with gzip.open(short, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 0x08, 3) + b"\x00\x00")
    with pytest.raises(ValueError, match="truncated IDX header"):
        read_idx(short)


@pytest.mark.parametrize("classes", [[11], [], list(range(10)), [-1, 0]])
def test_positive_classes_must_be_a_proper_subset(mnist_dir, classes):
    data_dir, _ = mnist_dir
    with pytest.raises(ValueError, match="non-empty proper subset"):
        load_mnist_binary(data_dir, positive_classes=classes)


@pytest.mark.parametrize("test_size", [-0.2, 0, 1, 1.5, 10, True])
def test_ijcnn1_test_size_is_a_fraction(tmp_path, test_size):
    with pytest.raises(ValueError, match="test_size must be a fraction"):
        load_ijcnn1(tmp_path, test_size=test_size)


def test_a_corrupt_libsvm_archive_names_its_path(tmp_path):
    folder = tmp_path / "ijcnn1"
    folder.mkdir()
    (folder / "ijcnn1.bz2").write_bytes(b"not bzip2 data")
    with pytest.raises(ValueError, match="ijcnn1.bz2: not a readable LIBSVM file"):
        load_ijcnn1(tmp_path)
