"""A read-only table model over a plain list: the dialogs' small tables share it.

Subclasses name their columns in ``HEADERS`` and answer ``data()``; the list, the counts
and the header text live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

ModelIndex = QModelIndex | QPersistentModelIndex
T = TypeVar("T")


class ListTableModel(QAbstractTableModel, Generic[T]):
    """Attributes:
    HEADERS: the column titles.
    items: the rows, in display order.
    """

    HEADERS: tuple[str, ...] = ()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.items: list[T] = []

    def set_items(self, items: Sequence[T]) -> None:
        self.beginResetModel()
        self.items = list(items)
        self.endResetModel()

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.items)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole
                and 0 <= section < len(self.HEADERS)):
            return self.HEADERS[section]
        return None
