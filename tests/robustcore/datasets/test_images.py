import numpy as np
import pytest

from robustcore.datasets import LoadError, load

tifffile = pytest.importorskip("tifffile")
Image = pytest.importorskip("PIL.Image")


def test_png_folder_round_trip_in_natural_order(tmp_path):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(11, 6, 7), dtype=np.uint8)
    for k, f in enumerate(frames):
        Image.fromarray(f).save(tmp_path / f"frame{k}.png")
    (tmp_path / "notes.txt").write_text("ignored")
    ds = load(tmp_path)
    assert ds.image_shape == (6, 7) and ds.X.shape == (11, 42)
    assert ds.sample_ids[:3] == ["frame0.png", "frame1.png", "frame2.png"] and ds.sample_ids[10] == "frame10.png"
    assert np.array_equal(ds.X, frames.reshape(11, -1))
    assert np.array_equal(ds.frame_order, np.arange(11))
    p = ds.provenance
    assert p.loader == "images" and p.path == str(tmp_path.resolve()) and len(p.sha256) == 64
    Image.fromarray(frames[0] // 2).save(tmp_path / "frame0.png")
    assert load(tmp_path).provenance.sha256 != p.sha256  # a changed file changes the folder hash


def test_colour_becomes_luminance_and_class_folders_are_labels(tmp_path):
    rgb = np.zeros((2, 3, 3), dtype=np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 100, 50, 200
    for cls in ("cats", "dogs"):
        (tmp_path / cls).mkdir()
        Image.fromarray(rgb).save(tmp_path / cls / "a.png")
    ds = load(tmp_path)
    assert ds.labels.tolist() == ["cats", "dogs"]
    assert np.allclose(ds.X, 0.299 * 100 + 0.587 * 50 + 0.114 * 200)


def test_images_of_different_sizes(tmp_path):
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "a.png")
    Image.fromarray(np.zeros((4, 5), np.uint8)).save(tmp_path / "b.png")
    with pytest.raises(LoadError, match="b.png is 4x5.*a.png is 4x4"):
        load(tmp_path)


def test_empty_folder_and_broken_image(tmp_path):
    with pytest.raises(LoadError, match="holds no images"):
        load(tmp_path)
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 40), dtype=np.uint8)).save(tmp_path / "a.png")
    raw = (tmp_path / "a.png").read_bytes()
    (tmp_path / "b.png").write_bytes(raw[:60])
    with pytest.raises(LoadError, match="b.png"):
        load(tmp_path)


def test_multiframe_tiff_16bit_and_rgb(tmp_path):
    stack = np.arange(3 * 4 * 5, dtype=np.uint16).reshape(3, 4, 5) * 1000
    tifffile.imwrite(tmp_path / "s.tif", stack, photometric="minisblack")
    ds = load(tmp_path / "s.tif")
    assert ds.provenance.loader == "tiff" and ds.image_shape == (4, 5)
    assert np.array_equal(ds.X, stack.reshape(3, -1))
    assert load(tmp_path / "s.tif", max_samples=2).X.shape == (2, 20)
    rgb = np.zeros((2, 4, 5, 3), dtype=np.uint8)
    rgb[..., 1] = 10
    tifffile.imwrite(tmp_path / "c.tif", rgb, photometric="rgb")
    c = load(tmp_path / "c.tif")
    assert c.X.shape == (2, 20) and np.allclose(c.X, 5.87)


def test_truncated_tiff(tmp_path):
    tifffile.imwrite(tmp_path / "s.tif", np.ones((5, 30, 30), np.float32))
    raw = (tmp_path / "s.tif").read_bytes()
    (tmp_path / "t.tif").write_bytes(raw[:300])
    with pytest.raises(LoadError):
        load(tmp_path / "t.tif")


def test_a_link_to_an_image_outside_the_folder_is_refused_by_location(tmp_path):
    # Issue 34.9: the folder followed a symlink to an image outside it and made it a sample.
    folder, outside = tmp_path / "frames", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    frames = np.arange(3 * 4 * 5, dtype=np.uint8).reshape(3, 4, 5)
    for k in range(2):
        Image.fromarray(frames[k]).save(folder / f"f{k}.png")
    Image.fromarray(frames[2]).save(outside / "secret.png")
    (folder / "f2.png").symlink_to(outside / "secret.png")
    with pytest.raises(LoadError, match=r"f2\.png is a link to .*secret\.png, outside the folder"):
        load(folder)
    # A link that stays inside the folder is an ordinary sample.
    (folder / "f2.png").unlink()
    (folder / "f2.png").symlink_to(folder / "f0.png")
    ds = load(folder)
    assert np.array_equal(ds.X, np.stack([frames[0], frames[1], frames[0]]).reshape(3, -1))
    # A class sub-folder that is a link outside is refused the same way.
    (folder / "f2.png").unlink()
    for k in range(2):
        (folder / f"f{k}.png").unlink()
    (folder / "cats").mkdir()
    Image.fromarray(frames[0]).save(folder / "cats" / "a.png")
    (folder / "dogs").symlink_to(outside)
    with pytest.raises(LoadError, match="dogs is a link to .*elsewhere, outside the folder"):
        load(folder)
