"""From validated rows to job specs: stable keys, repeats, output paths, metadata.

See :mod:`reelqueue.intake.planner` for why keys hash an occurrence count rather than the
row number. A repeated row with a seed renders seeds S, S+1, S+2... (as batch generators
do), since the same seed would render the same video again on deterministic providers;
one without a seed gets a seed drawn for each take (``draw_seed``), recorded in its params,
so any take can be rendered again. A row's repeats are its takes (issue 35 item 1;
``--takes N`` sets the repeat of rows that give none).
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reelqueue.domain.models import JobSpec
from reelqueue.intake.filenames import (
    CompiledTemplate,
    NameAllocator,
    name_from_prompt,
    sanitise_component,
)
from reelqueue.intake.images import PIN_FIELD
from reelqueue.intake.rows import RowError, RowValues


def key_digest(*parts: object) -> str:
    joined = repr(parts)
    return hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def json_safe(value: object) -> Any:
    """A cell as a JSON value, for metadata, the manifest and the export."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return str(value)


class JobBuilder:
    """Builds the jobs of one import.

    Attributes:
        scope: the batch's identity in job keys (its name, case-folded).
        folder: the batch's output folder (absolute).

    ``typed_cells=False`` says the cells are all text (CSV, TSV, TXT), so they go into
    the metadata as they are.
    """

    def __init__(
        self,
        *,
        scope: str,
        batch_name: str,
        output_root: Path,
        template: str,
        headers: Sequence[str],
        kept_columns: Sequence[str],
        date: datetime.datetime,
        typed_cells: bool = True,
        image_pins: Callable[[object], str | None] | None = None,
        draw_seed: Callable[[str], int | None] | None = None,
    ) -> None:
        self.scope = scope
        # A take of a repeated row without a seed gets one drawn (None: its provider takes
        # none), so any take can be rendered again (issue 35 item 1). After the key.
        self._draw_seed = draw_seed
        # The sha256 of each local image, recorded with the job (intake/images.py). Added
        # after the key is made, so a row's key is what it always was.
        self._image_pins = image_pins
        self.batch_name = batch_name
        #: the batch's folder name: the journal keeps it, and each job's path under it,
        #: relative to the videos folder (every machine resolves it under its own)
        self.folder_name = sanitise_component(batch_name, "batch")
        self.folder = output_root.expanduser().resolve() / self.folder_name
        self.template = template
        self._template = CompiledTemplate(template)
        # A repeated row needs {n} in its names; the template gets "_{n}" if it has none.
        self._repeat_template = (
            self._template if "n" in self._template.fields
            else CompiledTemplate(template + "_{n}")
        )
        self._simple_fields = set(self._repeat_template.fields) <= {"row", "name", "n"}
        kept = set(kept_columns)
        self._headers = list(headers)
        self._kept = [(index, header) for index, header in enumerate(headers) if header in kept]
        self._all_kept = len(self._kept) == len(self._headers)
        self._typed_cells = typed_cells  # False: every cell is text (CSV, TSV, TXT)
        self._folder_prefix = self.folder_name + "/"
        self._date = date.strftime("%Y-%m-%d")

    def build(self, rows: Iterable[RowValues], id_header: str = "id") -> tuple[
        list[JobSpec], list[RowError]
    ]:
        """The jobs of ``rows`` (consumed once, in row order), and the rows refused for
        repeating another row's id."""
        allocator = NameAllocator()
        occurrences: dict[str, int] = {}
        first_row_of_id: dict[str, int] = {}
        jobs: list[JobSpec] = []
        errors: list[RowError] = []
        scope = self.scope
        for values in rows:
            if values.row_id is not None:
                first = first_row_of_id.setdefault(values.row_id, values.row_number)
                if first != values.row_number:
                    errors.append(RowError(
                        values.row_number, id_header,
                        f"the id {values.row_id!r} is also used by row {first}",
                        "an id that no other row uses",
                    ))
                    continue
                base_key = "id:" + key_digest(scope, values.row_id)
            elif values.route is not None:
                # A routed row: the route as written and the cells as written, never the
                # candidate ranked first (intake/routes.py), so new prices add nothing.
                content = key_digest(scope, *values.route_content)
                occurrence = occurrences[content] = occurrences.get(content, 0) + 1
                base_key = (f"route:{content}" if occurrence == 1
                            else f"route:{content}~{occurrence}")
            else:
                # params are built in one fixed field order, so their repr is canonical.
                content = key_digest(
                    scope, values.prompt, values.provider, values.params, values.account,
                    values.name,
                )
                occurrence = occurrences[content] = occurrences.get(content, 0) + 1
                base_key = f"row:{content}" if occurrence == 1 else f"row:{content}~{occurrence}"
            metadata = {"columns": self._columns(values.cells)}
            if values.repeat == 1:
                jobs.append(self._job(values, base_key, 1, metadata, allocator))
                continue
            for n in range(1, values.repeat + 1):
                jobs.append(self._job(values, base_key, n, metadata, allocator))
        return jobs, errors

    def _job(
        self, values: RowValues, base_key: str, n: int, metadata: dict[str, Any],
        allocator: NameAllocator,
    ) -> JobSpec:
        params = self._params(values.params, n)
        if (values.repeat > 1 and values.route is None and "seed" not in params
                and self._draw_seed is not None):
            seed = self._draw_seed(values.provider)
            if seed is not None:
                params = {**params, "seed": seed}
        route = values.route
        if route is not None:
            candidates = tuple(
                c if (moved := self._params(c.params, n)) is c.params else replace(c, params=moved)
                for c in route.candidates)
            if any(new is not old for new, old in zip(candidates, route.candidates, strict=True)):
                route = replace(route, candidates=candidates)
            best = route.candidates[0].params  # already this copy's (seed, image pin)
            params = best if isinstance(best, dict) else dict(best)
        name = values.name or name_from_prompt(values.prompt)
        template = self._repeat_template if values.repeat > 1 else self._template
        fields: dict[str, object] = {"row": values.row_number, "name": name, "n": n}
        if not self._simple_fields:
            fields.update(
                seed=params.get("seed", ""), model=params.get("model", ""),
                provider=values.provider, date=self._date, id=values.row_id or "",
                batch=self.batch_name,
            )
        file_name = allocator.take(
            sanitise_component(template.render(fields), f"row_{values.row_number}")
        )
        return JobSpec(
            job_key=base_key if n == 1 else f"{base_key}#{n}",
            prompt=values.prompt,
            provider=values.provider,
            output_path=self._folder_prefix + file_name,
            params=params,
            pinned_account=values.account,
            row_number=values.row_number,
            name=name,
            priority=values.priority,
            metadata=metadata if n == 1 else {**metadata, "repeat": n},
            route=route,
        )

    def _params(self, given: Mapping[str, Any], n: int) -> dict[str, Any]:
        """The params of copy ``n`` of a row: seed S+n-1, the image's pin added; ``given``
        itself when nothing is added (shared with the row's values: nothing mutates
        either)."""
        params = given if isinstance(given, dict) else dict(given)
        if n > 1 and "seed" in params:
            params = {**params, "seed": int(params["seed"]) + n - 1}
        if self._image_pins is not None and "image" in params:
            pin = self._image_pins(params["image"])
            if pin is not None:
                params = {**params, PIN_FIELD: pin}
        return params

    def _columns(self, cells: Sequence[object]) -> dict[str, Any]:
        """The row's cells by header, as JSON values, for the export."""
        if self._all_kept and len(cells) == len(self._headers):
            columns = dict(zip(self._headers, cells, strict=True))
            if self._typed_cells:
                for header, cell in columns.items():
                    if cell is not None and type(cell) is not str:
                        columns[header] = json_safe(cell)  # workbooks' typed cells
            return columns
        width = len(cells)
        return {
            header: (cell if type(cell) is str else json_safe(cell))
            if index < width and (cell := cells[index]) is not None else None
            for index, header in self._kept
        }
