"""The retry plan's sentence (issue 34: one set of words). The plan itself is the
engine's (:mod:`reelqueue.engine.retry_plan`: what a retry does with each job and what it
costs); what the user reads about it is said here, with the states' one names
(:mod:`reelqueue.application.words`), the same in the window, the CLI and the API."""

from __future__ import annotations

from reelqueue.application.words import OUTCOME_UNKNOWN, job_state_words
from reelqueue.engine.retry_plan import RetryPlan
from reelqueue.intake.estimate import UNKNOWN, money

__all__ = ["retry_summary"]


def retry_summary(plan: RetryPlan, *,
                  include_hint: str = "add --include-permanent to retry them too") -> str:
    """One sentence: '3 jobs: 2 will be re-read from the provider (no charge), 1 will be
    rendered again (est. $1.20)'. ``include_hint``: how to retry the jobs left out, in
    the front end's words."""
    marked = f"“{job_state_words(OUTCOME_UNKNOWN).name}”"
    total = len(plan.job_ids)
    parts = []
    if plan.reread:
        parts.append(f"{len(plan.reread)} will be re-read from the provider (no charge; "
                     "created again only if the provider says the render is gone)")
    if plan.reconcile:
        parts.append(f"{len(plan.reconcile)} marked {marked} will be looked "
                     "for in the provider's records first (no charge; created again only "
                     "if they show the first create never arrived)")
    if plan.look_only:
        n = len(plan.look_only)
        parts.append(f"{n} marked {marked} will be looked for in the "
                     "provider's records (no charge); if not found, "
                     f"{'they stay' if n != 1 else 'it stays'} unknown for you to "
                     "resolve: these records can find a render but never prove one "
                     "absent, so nothing is created again without your word")
    if plan.rerender:
        price = plan.price_text if not plan.variants else plan.price_for(
            plan.rerender_usd - plan.variant_usd, plan.unpriced - plan.variant_unpriced,
            len(plan.rerender))
        parts.append(f"{len(plan.rerender)} will be rendered again ({price})")
    if plan.variants:
        n = len(plan.variants)
        price = plan.price_for(plan.variant_usd, plan.variant_unpriced, n)
        parts.append(f"{n} finished video{'s' if n != 1 else ''} "
                     f"{'are' if n != 1 else 'is'} kept and rendered again as "
                     f"{'new jobs' if n != 1 else 'a new job'} with the new seed "
                     f"({price})")
    if plan.maybe_charged:
        n = len(plan.maybe_charged)
        unpriced = plan.maybe_charged_unpriced
        price = (f" ({plan.unknown or UNKNOWN})" if unpriced == n
                 else f" (est. {money(plan.maybe_charged_usd)}"
                 + (" + price unknown)" if unpriced else ")"))
        parts.append(f"for {n} of them{price} the first create may already be charged, "
                     f"so this may pay twice (marked {marked}, not looked for first)")
    text = f"{total} job{'s' if total != 1 else ''}" + (": " + ", ".join(parts)
                                                         if parts else "")
    if plan.skipped_permanent:
        unknown = len(plan.left_out_unknown)
        permanent = len(plan.left_out_permanent)
        if permanent:
            text += (f". {permanent} permanent failure{'s' if permanent != 1 else ''} "
                     "(content policy, invalid input...) "
                     f"{'were' if permanent != 1 else 'was'} left out")
        if unknown:
            text += (f"{'; ' if permanent else '. '}{unknown} marked {marked} "
                     "that cannot be looked for in the provider's records (a "
                     "retry creates them again, and the first create may already be "
                     f"charged) {'were' if unknown != 1 else 'was'} left out")
        text += f"; {include_hint}"
    if plan.not_retryable:
        n = len(plan.not_retryable)
        text += (f". {n} {'are' if n != 1 else 'is'} not failed, cancelled or parked "
                 f"and {'are' if n != 1 else 'is'} left alone")
    return text + "."
