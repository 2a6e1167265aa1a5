"""Every job state change, written once as data: from which states, to which, which columns
it sets and which it clears.

The SQL stores write each as a named statement (``store/sql/queries.sql``: the name is the
key here), and ``tests/store/test_transitions.py`` reads the SQL and fails when a
statement and its row here disagree (the memory store is the SQLite journal in memory,
so it runs the same statements). PostgreSQL runs the same check on its own ``.sql``
file.

``updated_at`` is set by every transition and is not listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reelqueue.domain.models import Job
from reelqueue.domain.states import FINAL, IN_FLIGHT, JobState

CLAIM = frozenset({"claim_token", "lease_owner", "lease_until"})
ERROR = frozenset({"error_class", "error_label", "error_message"})
REMOTE_STATUS = frozenset({"sub_status", "progress"})
ALL_STATES = frozenset(JobState)


@dataclass(frozen=True)
class Transition:
    """Attributes:
    name: the statement's name in the ``.sql`` file.
    from_states: the states it applies in; None: the caller names the one state (recovery:
        the state its plan read, ``state = :planned_state``; a row that moved on since is
        left alone).
    to_states: the state(s) it may leave the job in (two: chosen by a parameter); empty:
        the state stays; None: the caller names it (``state = :state``).
    sets: the columns given a value (not NULL).
    clears: the columns always set to NULL.
    may_clear: the columns set to NULL or kept, as a flag of the call decides.
    render: True: only a job that has a provider job id; False: only one that has none;
        None: either.
    fenced: the statement names the claim token (a stale claim changes nothing).
    """

    name: str
    from_states: frozenset[JobState] | None
    to_states: frozenset[JobState] | None
    sets: frozenset[str] = frozenset()
    clears: frozenset[str] = frozenset()
    may_clear: frozenset[str] = frozenset()
    render: bool | None = None
    fenced: bool = True

    def allows(self, job: Job) -> bool:
        """Whether the job's state and render let this transition apply (not the token)."""
        if self.from_states is not None and job.state not in self.from_states:
            return False
        return self.render is None or (job.provider_job_id is not None) == self.render


def _t(name: str, from_states: Iterable[JobState] | None, to: Iterable[JobState] | None,
       sets: Iterable[str] = (), clears: Iterable[str] = (), may_clear: Iterable[str] = (),
       render: bool | None = None, fenced: bool = True) -> Transition:
    return Transition(name, None if from_states is None else frozenset(from_states),
                      None if to is None else frozenset(to), frozenset(sets),
                      frozenset(clears), frozenset(may_clear), render, fenced)


S = JobState
TRANSITIONS: dict[str, Transition] = {t.name: t for t in (
    _t("claim_job", {S.QUEUED, S.RETRY_WAIT}, {S.CLAIMED},
       sets={"account", "attempts", "started_at"} | CLAIM, clears=ERROR, fenced=False),
    _t("fenced_mark_submitting", {S.CLAIMED}, {S.SUBMITTING}, sets={"client_token"},
       render=False),
    _t("fenced_record_submitted", {S.SUBMITTING}, {S.RENDERING},
       sets={"provider_job_id", "sub_status"}),
    _t("fenced_mark_rendering", {S.CLAIMED, S.SUBMITTING, S.RENDERING}, {S.RENDERING},
       render=True),
    _t("fenced_record_progress", {S.RENDERING}, (), sets=REMOTE_STATUS),
    _t("fenced_mark_downloading", {S.RENDERING}, {S.DOWNLOADING},
       sets={"output_path", "output_part"}, clears={"output_size", "output_sha256"}),
    _t("fenced_record_download", {S.DOWNLOADING}, (), sets={"output_size", "output_sha256"}),
    _t("fenced_mark_completed", {S.DOWNLOADING}, {S.COMPLETED},
       sets={"output_size", "output_sha256", "output_host", "cost", "progress",
             "finished_at"},
       clears=CLAIM | ERROR),
    _t("fenced_set_retry_wait", IN_FLIGHT, {S.RETRY_WAIT}, sets={"run_after"} | ERROR,
       clears=CLAIM | REMOTE_STATUS, may_clear={"account", "provider_job_id", "client_token"}),
    _t("fenced_release_to_queue", IN_FLIGHT, {S.QUEUED, S.RETRY_WAIT},
       sets={"run_after", "attempts"} | ERROR, clears=CLAIM | REMOTE_STATUS,
       may_clear={"account", "client_token"}),
    # Routing (issue 24): a waiting job with nothing sent moves to another candidate at
    # claim; a definite refusal of its create hands it back to the queue on the next one.
    _t("route_take", {S.QUEUED, S.RETRY_WAIT}, (), sets={"provider", "params", "metadata"},
       render=False, fenced=False),
    _t("fenced_hand_over", {S.CLAIMED, S.SUBMITTING, S.RENDERING}, {S.QUEUED},
       sets={"run_after", "attempts", "provider", "params", "route", "metadata"} | ERROR,
       clears=CLAIM | REMOTE_STATUS | {"account", "client_token", "provider_job_id"}),
    _t("fenced_mark_failed", IN_FLIGHT, {S.FAILED}, sets={"finished_at"} | ERROR,
       clears=CLAIM, may_clear={"provider_job_id"}),
    _t("fenced_park", IN_FLIGHT, {S.PARKED}, sets=ERROR, clears=CLAIM | {"sub_status"}),
    _t("fenced_forget_submission", {S.SUBMITTING}, {S.CLAIMED}, clears={"client_token"},
       render=False),
    _t("attach_render", {S.PARKED, S.FAILED}, {S.QUEUED},
       sets={"provider_job_id", "attempts", "run_after"},
       clears={"finished_at"} | REMOTE_STATUS, render=False, fenced=False),
    _t("cancel_job", ALL_STATES - FINAL, {S.CANCELLED}, sets={"finished_at"}, clears=CLAIM,
       fenced=False),
    _t("requeue_job", {S.FAILED, S.CANCELLED, S.PARKED}, {S.QUEUED},
       sets={"attempts", "run_after", "params"}, clears={"finished_at"} | REMOTE_STATUS,
       may_clear={"account", "client_token", "provider_job_id"}, fenced=False),
    _t("recover_complete", None, {S.COMPLETED},
       sets={"output_size", "output_sha256", "output_host", "progress", "finished_at"},
       clears=CLAIM | ERROR),
    _t("recover_reattach", None, None, sets=CLAIM),
    _t("recover_requeue", None, {S.QUEUED}, sets={"run_after", "attempts"},
       clears=CLAIM | REMOTE_STATUS | {"account", "client_token", "provider_job_id"}),
    _t("recover_fail", None, {S.FAILED}, sets={"finished_at"} | ERROR, clears=CLAIM),
    _t("recover_park", None, {S.PARKED}, sets=ERROR, clears=CLAIM | {"sub_status"}),
)}
