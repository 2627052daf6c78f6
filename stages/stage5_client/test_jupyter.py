"""The client works inside a Jupyter kernel (which runs its own asyncio loop on the main thread).

The kernel is real (ipykernel through nbclient); the cells produce and consume
against the shared broker, with the same code a script would use.
"""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.integration

CELLS = [
    "import asyncio\n"
    "asyncio.get_event_loop().is_running()  # the kernel's own loop",
    "from simplekafka.admin import Admin\n"
    "from simplekafka.client import TopicPartition\n"
    "from simplekafka.consumer import Consumer\n"
    "from simplekafka.producer import Producer\n"
    "admin = Admin(BOOTSTRAP)\n"
    "admin.create_topic('jupyter')",
    "producer = Producer(BOOTSTRAP, acks='all')\n"
    "offsets = [producer.send('jupyter', b'cell %d' % i).get(30).offset for i in range(5)]\n"
    "producer.close()\n"
    "offsets",
    "consumer = Consumer(bootstrap_servers=BOOTSTRAP, auto_offset_reset='earliest',\n"
    "                    consumer_timeout_ms=2000)\n"
    "consumer.assign([TopicPartition('jupyter', 0)])\n"
    "values = [r.value for r in consumer]\n"
    "consumer.close(); admin.close()\n"
    "values",
]


def test_produce_and_consume_from_a_notebook_kernel(cluster):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"BOOTSTRAP = {cluster.bootstrap_servers!r}")]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in CELLS]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = [cell.outputs for cell in notebook.cells]
    assert outputs[1][0]["data"]["text/plain"] == "True"
    assert outputs[3][0]["data"]["text/plain"] == "[0, 1, 2, 3, 4]"
    expected = [b"cell %d" % i for i in range(5)]
    assert outputs[4][0]["data"]["text/plain"] == repr(expected)
