"""One real local-cluster (two executor JVMs of two cores each) with the plugin, shared by the tests.

Needs the plugin jar (``mvn package`` builds ``spark-plugin/target/spark-collective-spark-*.jar``; or
``SPARK_COLLECTIVE_JAR``) and PySpark of the jar's Spark line.
"""

import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plugin_jar() -> str:
    jar = os.environ.get("SPARK_COLLECTIVE_JAR")
    if jar:
        return jar
    jars = [j for j in glob.glob(os.path.join(ROOT, "spark-plugin", "target", "spark-collective-spark-*.jar"))
            if "original-" not in os.path.basename(j) and not j.endswith(("-tests.jar", "-sources.jar"))]
    if not jars:
        raise RuntimeError("no plugin jar: run mvn -B -q -DskipTests package first (or set SPARK_COLLECTIVE_JAR)")
    return jars[0]


def spark_conf(master: str, app: str, plugin: bool = True):
    """A SparkConf for real executor JVMs started from PySpark's own jars (local-cluster needs testing mode)."""
    import pyspark
    from pyspark import SparkConf

    home = os.path.dirname(pyspark.__file__)
    scala = "2.13" if pyspark.__version__.startswith("4") else "2.12"
    os.environ.setdefault("SPARK_HOME", home)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = (SparkConf().setMaster(master).setAppName(app)
            .set("spark.driver.extraJavaOptions", f"-Dspark.testing=1 -Dspark.test.home={home}")
            .set("spark.executorEnv.SPARK_SCALA_VERSION", scala)
            .set("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
            .set("spark.ui.enabled", "false")
            .set("spark.pyspark.python", sys.executable)
            .set("spark.task.maxFailures", "1")
            .set("spark.python.worker.reuse", "true"))
    if plugin:
        jar = plugin_jar()
        conf = (conf.set("spark.jars", jar).set("spark.driver.extraClassPath", jar)
                .set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin"))
    return conf


@pytest.fixture(scope="session")
def sc():
    from pyspark import SparkContext

    context = SparkContext(conf=spark_conf("local-cluster[2,2,1024]", "spark-collective-python-tests"))
    context.setLogLevel("WARN")
    # Both executors up before the first barrier stage (it needs all four slots at once).
    context.parallelize(range(8), 8).count()
    yield context
    context.stop()
