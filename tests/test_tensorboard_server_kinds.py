"""A real TensorBoard serves every issue-3 kind tallyboard wrote: images, histograms,
distributions, audio, pr_curves, mesh and custom_scalars, through their plugins' JSON routes."""

from __future__ import annotations

import numpy as np
from tallyboard import SummaryWriter
from tb_server import tensorboard_server

RUN = "run1"
VERTICES = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=np.float32)
COLORS = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=np.uint8)
FACES = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)


def write_run(logdir) -> None:
    rng = np.random.default_rng(0)
    with SummaryWriter(logdir / RUN) as w:
        for step in range(3):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
            w.add_scalar("loss/val", 1.5 / (step + 1), step)
            w.add_histogram("weights", rng.standard_normal(1000) + step, step)
        w.add_image("img", rng.random((3, 8, 8)), 1)
        w.add_audio("snd", np.sin(np.linspace(0, 100, 800)) * 0.5, 1, sample_rate=8000)
        w.add_pr_curve("pr", [1, 0, 1, 0], [0.9, 0.2, 0.6, 0.7], 2, num_thresholds=3)
        w.add_mesh(
            "cube",
            VERTICES,
            colors=COLORS,
            faces=FACES,
            config_dict={"camera": {"cls": "PerspectiveCamera"}},
            global_step=4,
        )
        w.add_custom_scalars({"losses": {"both": ["Multiline", ["loss/"]]}})


def test_tensorboard_serves_every_kind(logdir):
    write_run(logdir)
    with tensorboard_server(logdir) as tb:
        assert RUN in tb.get_json("/data/runs")
        listing = tb.get_json("/data/plugins_listing")
        for plugin in (
            "images",
            "histograms",
            "distributions",
            "audio",
            "pr_curves",
            "mesh",
            "custom_scalars",
        ):
            assert listing[plugin]["enabled"], plugin

        # histograms and distributions
        assert "weights" in tb.get_json("/data/plugin/histograms/tags")[RUN]
        hist = tb.get_json("/data/plugin/histograms/histograms", run=RUN, tag="weights")
        assert [h[1] for h in hist] == [0, 1, 2]
        buckets = hist[0][2]
        assert sum(b[2] for b in buckets) == 1000 and all(b[0] <= b[1] for b in buckets)
        dist = tb.get_json("/data/plugin/distributions/distributions", run=RUN, tag="weights")
        assert [d[1] for d in dist] == [0, 1, 2] and len(dist[0][2]) == 9
        medians = [dict(d[2])[5000] for d in dist]
        assert medians[0] < medians[1] < medians[2]

        # images
        assert "img" in tb.get_json("/data/plugin/images/tags")[RUN]
        (image,) = tb.get_json("/data/plugin/images/images", run=RUN, tag="img", sample=0)
        assert image["step"] == 1
        png = tb.get("/data/plugin/images/individualImage?" + image["query"])
        assert png.startswith(b"\x89PNG")

        # audio
        assert "snd" in tb.get_json("/data/plugin/audio/tags")[RUN]
        (clip,) = tb.get_json("/data/plugin/audio/audio", run=RUN, tag="snd", sample=0)
        assert clip["contentType"] == "audio/wav"
        wav = tb.get("/data/plugin/audio/individualAudio?" + clip["query"])
        assert wav[:4] == b"RIFF" and len(wav) == 44 + 2 * 800

        # pr_curves
        assert "pr" in tb.get_json("/data/plugin/pr_curves/tags")[RUN]
        curves = tb.get_json("/data/plugin/pr_curves/pr_curves", run=RUN, tag="pr")[RUN]
        (entry,) = curves
        assert entry["step"] == 2
        # TensorBoard trims the trailing threshold where nothing is predicted positive
        np.testing.assert_allclose(entry["precision"], [0.5, 2 / 3], rtol=1e-6)
        np.testing.assert_allclose(entry["recall"], [1, 1], rtol=1e-6)
        assert entry["true_positives"] == [2, 2] and entry["false_positives"] == [2, 1]

        # mesh
        assert "cube" in tb.get_json("/data/plugin/mesh/tags")[RUN]
        meshes = tb.get_json("/data/plugin/mesh/meshes", run=RUN, tag="cube", sample=0)
        assert {m["content_type"] for m in meshes} == {1, 2, 3}  # VERTEX, FACE, COLOR
        assert all(m["step"] == 4 and m["components"] == 14 for m in meshes)
        vertices = tb.get(
            "/data/plugin/mesh/data", run=RUN, tag="cube", content_type="VERTEX", sample=0, step=4
        )
        np.testing.assert_array_equal(
            np.frombuffer(vertices, dtype=np.float32), VERTICES.reshape(-1)
        )
        faces = tb.get(
            "/data/plugin/mesh/data", run=RUN, tag="cube", content_type="FACE", sample=0, step=4
        )
        np.testing.assert_array_equal(np.frombuffer(faces, dtype=np.int32), FACES.reshape(-1))

        # custom_scalars
        layout = tb.get_json("/data/plugin/custom_scalars/layout")
        (category,) = layout["category"]
        assert category["title"] == "losses" and category["chart"][0]["multiline"]["tag"] == [
            "loss/"
        ]
        scalars = tb.get_json("/data/plugin/custom_scalars/scalars", run=RUN, tag="loss/")
        assert scalars["regex_valid"] is True
        assert set(scalars["tag_to_events"]) == {"loss/train", "loss/val"}
        assert [e[1] for e in scalars["tag_to_events"]["loss/val"]] == [0, 1, 2]
