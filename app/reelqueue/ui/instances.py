"""The "Instances" view of a team queue (issue 15): every machine sharing the team
database, from its instances registry: host, pid, version, when it started, its last
heartbeat and its live renders. A machine silent for longer than a lease is said to be
so, with what follows from it (any other instance takes its renders over).

The rows come from :func:`reelqueue.application.team.machines` (read on the journal's
thread); the controller refreshes an open dialog on the window's tick.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.team import RUNNING, SILENT, TeamMachine, providers_words
from reelqueue.ui import format as fmt

COLUMNS = ("Machine", "PID", "Version", "Started", "Last heartbeat", "Live renders",
           "Providers")


def heartbeat_text(machine: TeamMachine) -> str:
    """"just now"; "12 s ago"; "not heard from for 3 min — its renders are taken over"; "stopped at
    14:32"."""
    if machine.state == RUNNING:
        if machine.silent_for < 1:
            return "just now"
        return f"{fmt.rough_duration(machine.silent_for)} ago"
    if machine.state == SILENT:
        takeover = (" — its renders are taken over" if machine.live_renders
                    else " — it holds no renders")
        return f"not heard from for {fmt.rough_duration(machine.silent_for)}{takeover}"
    return f"stopped at {fmt.clock(machine.heartbeat_at)}"


def machine_cells(machine: TeamMachine) -> tuple[str, ...]:
    host = f"{machine.host} (this window)" if machine.this_machine else machine.host
    return (host, str(machine.pid), machine.version, fmt.stamp(machine.started_at),
            heartbeat_text(machine), fmt.number(machine.live_renders),
            providers_words(machine))


def summary_text(machines: list[TeamMachine]) -> str:
    running = sum(1 for m in machines if m.state == RUNNING)
    silent = sum(1 for m in machines if m.state == SILENT)
    live = sum(m.live_renders for m in machines if m.state == RUNNING)
    text = (f"{fmt.count(running, 'machine')} running, "
            f"{fmt.count(live, 'render')} in flight on them")
    if silent:
        text += f"; {fmt.count(silent, 'machine')} not heard from"
    return text + "."


class InstancesDialog(QDialog):
    """The machines sharing the team queue, refreshed by the controller.

    Attributes:
        machines: the rows shown (the last read).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Instances")
        self.machines: list[TeamMachine] = []
        layout = QVBoxLayout(self)
        self.summary = QLabel("Reading the team database…")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.table, 1)
        note = QLabel("Every machine renews its leases and its heartbeat here; a machine "
                      "not heard from for longer than a lease has its renders taken over "
                      "by the others (reattached, never created again).")
        note.setProperty("role", "muted")
        note.setWordWrap(True)
        layout.addWidget(note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(820, 360)

    def set_machines(self, machines: list[TeamMachine], unserved: Sequence[str] = ()) -> None:
        """Show ``machines``; ``unserved``: why jobs wait that no running machine can
        render (application.team.unserved), said under the summary."""
        self.machines = machines
        text = (summary_text(machines) if machines
                else "No machine has registered in the team database yet.")
        self.summary.setText("\n".join([text, *unserved]))
        self.table.setRowCount(len(machines))
        for row, machine in enumerate(machines):
            for column, text in enumerate(machine_cells(machine)):
                item = self.table.item(row, column)
                if item is None:
                    item = QTableWidgetItem()
                    self.table.setItem(row, column, item)
                item.setText(text)
                if column in (1, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight
                                          | Qt.AlignmentFlag.AlignVCenter)
                item.setToolTip(text)

    def cell_text(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return item.text() if item is not None else ""
