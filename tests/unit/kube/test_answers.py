"""pyctrl.kube.answers counts every answer exactly once, from any number of threads.

Under a GIL an unlocked ``+=`` on the module's count happens not to lose increments (no
thread switch between its load and its store); on a free-threaded interpreter it does, so this
test is the one that says the lock is there (docs/DESIGN.md, "Threads without the GIL").
"""

from __future__ import annotations

import threading

from pyctrl.kube import answers

THREADS = 4
NOTES = 20_000


def test_concurrent_notes_are_all_counted() -> None:
    before = answers.count()
    start = threading.Barrier(THREADS)

    def note_many() -> None:
        start.wait()
        for _ in range(NOTES):
            answers.note()

    threads = [threading.Thread(target=note_many, name=f"note-{i}") for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers.count() - before == THREADS * NOTES
