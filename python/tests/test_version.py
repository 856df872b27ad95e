"""The package's versions agree with the build's: the jar's (pom.xml) and the package metadata's."""

import os
import re

import spark_collective

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_plugin_version_is_the_poms_and_the_package_version_its_pep440_form():
    pom = open(os.path.join(ROOT, "pom.xml"), encoding="utf-8").read()
    project = re.search(r"<artifactId>spark-collective-parent</artifactId>\s*<version>([^<]+)</version>", pom)
    assert project, "no parent version in pom.xml"
    assert spark_collective.PLUGIN_VERSION == project.group(1)
    pep440 = project.group(1).replace("-SNAPSHOT", ".dev0")
    assert spark_collective.__version__ == pep440
    pyproject = open(os.path.join(ROOT, "python", "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == pep440
