"""Packaging for SimpleKafka: the package, its console script and its extras."""

from setuptools import find_packages, setup

CODECS = ["cramjam>=2.8", "crc32c>=2.3"]

EXTRAS = {
    "spark": ["pyspark[sql]==4.3.0", "pandas<3", "pyarrow"],
    "docs": ["sphinx>=7", "myst-parser>=3"],
    # nbclient and ipykernel run the walkthroughs in tests; jupyterlab is for opening them.
    "notebooks": ["nbclient>=0.10", "nbformat>=5", "ipykernel>=6", "jupyterlab>=4"],
    "clients": [
        # Real Kafka clients, used as independent oracles in the interop tests.
        "kafka-python>=2.2",
        "confluent-kafka>=2.3",
        "aiokafka>=0.11",
        "lz4",
        "python-snappy",
        "zstandard",
    ],
    "test": [
        "pytest>=8",
        "pytest-timeout>=2.3",
        "pytest-rerunfailures>=14",
        "hypothesis>=6.100",
        "ruff>=0.6",
        "import-linter>=2.0",
    ],
}
EXTRAS["all"] = sorted({req for reqs in EXTRAS.values() for req in reqs})

setup(
    name="simplekafka",
    version="0.1.0",
    description="A Kafka-like broker built in stages, that real Kafka clients can use",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["simplekafka", "simplekafka.*", "stages", "stages.*"]),
    include_package_data=True,
    install_requires=[*CODECS, "bitstring>=4.1", "kazoo>=2.9", "twisted>=23.8"],
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["simplekafka = simplekafka.cli:main"]},
)
