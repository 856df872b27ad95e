"""The PySpark training example, run for real through its notebook (headless, by nbclient): the notebook
calls the script's own functions (data, both syncs, progress lines, charts); only the script's argument
parsing and SparkContext creation are left to its command line."""

import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def _pyspark4() -> bool:
    import pyspark
    return pyspark.__version__.startswith("4")


# One Spark line is enough for the examples (CI's time budget); the API they use is tested on both.
pytestmark = pytest.mark.skipif(_pyspark4(), reason="the examples run with the default Spark line")


def test_the_notebook_runs_headless_with_real_outputs():
    import nbclient
    import nbformat

    nb = nbformat.read(os.path.join(EXAMPLES, "softmax_regression.ipynb"), as_version=4)
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": EXAMPLES}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "final objective" in text and "largest difference between the two syncs" in text, text[-2000:]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 2, "both charts shown inline"
    diff = float(re.search(r"largest difference between the two syncs ([\d.e+-]+)", text).group(1))
    assert diff < 1e-9
    progress = re.findall(r"allReduce iteration +(\d+): loss ([\d.]+)", text)
    assert [int(i) for i, _ in progress] == [1, 10], text[-2000:]
    assert float(progress[-1][1]) < 0.8 * float(progress[0][1]), f"the objective did not fall: {progress}"
    for name in ("loss.png", "time-per-iteration.png"):
        with open(os.path.join(EXAMPLES, "..", "target", "notebook", name), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
