"""The run controller: starting a fit, judging its answer, and logging what became of it.

It owns the fit :class:`~app.tasks.TaskRunner` and decides where fits run (the warm worker
process of :mod:`app.fit_process`, or a worker thread with ``RSS_FIT_ISOLATION=thread``). A run
is tagged with what it started from (:class:`app.jobs.FitTag`); when the result arrives it is
stored in :class:`app.state.AppState` only if the data and that method's parameters are still
those, otherwise it is discarded and the Run log says why. It also keeps the Method panel told
what Run can do: the reason Run is refused, and defaults that would leave the views empty.

No dialogs here: the window shows errors (``show_error``) and messages (``status``).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from robustcore.datasets import is_lazy_dataset
from robustcore.methods import METHODS

from .fit_process import FitJob, run_job, shared_pool
from .jobs import FitTag
from .out_of_core import bigdata_settings, method_restrictions, results_dir, working_dir
from .panels import LogEntry
from .panels.run_log import format_evaluation
from .tasks import Job, TaskRunner

__all__ = ["RunController"]


def _source(ds):
    """Where a data set came from: its file and loader, or its name (demos, scripts)."""
    prov = getattr(ds, "provenance", None)
    path = getattr(prov, "path", None)
    return ("file", path) if path else ("name", ds.name)


class RunController(QObject):
    """Runs the chosen method on the current data; see the module doc.

    Signals: ``finished(object)`` a RunResult was stored; ``failed(str)``; ``cancelled()`` a fit
    was cancelled (Cancel, new data, a session, or a new run replacing it); ``discarded(str)`` a
    result was dropped (the reason); ``idle()`` no fit runs any more (not after a replacement).
    """

    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    discarded = Signal(str)
    idle = Signal()

    def __init__(self, parent, *, state, settings, methods: dict, method_panel, views, run_log,
                 status: Callable[..., None], show_error: Callable[..., object], isolation: str | None = None):
        super().__init__(parent)
        # "process": fits run in a worker process (default; see app.fit_process for why),
        # "thread": in a worker thread of this process (RSS_FIT_ISOLATION=thread).
        self.isolation = isolation or os.environ.get("RSS_FIT_ISOLATION", "process")
        if self.isolation not in ("process", "thread"):
            raise ValueError(f"isolation must be 'process' or 'thread'; got {self.isolation!r}")
        self.state, self.settings, self.methods = state, settings, methods
        self.panel, self.views, self.run_log = method_panel, views, run_log
        self.status, self.show_error = status, show_error
        self.session_path: Callable[[], str | None] = lambda: None   # set by the window
        self.runner = TaskRunner(parent)
        self._fitted_defaults: set = set()  # (data version, method) whose defaults were fitted to the data
        self._params_data = None  # the data set the forms' values were set on (carry-over check)
        r = self.runner
        r.busyChanged.connect(self._on_busy)
        r.progress.connect(lambda job, fraction, message: self.panel.set_progress(fraction, message))
        r.partial.connect(self._on_partial)
        r.finished.connect(self._on_finished)
        r.failed.connect(self._on_failed)
        r.cancelled.connect(self._on_cancelled)

    # -- what Run can do ------------------------------------------------------------------
    def update_blocker(self) -> None:
        """Tell the Method panel why Run is refused on the current data (None: it is not)."""
        ds = self.state.dataset
        m = self.panel.method()
        if ds is None:
            reason = "Load a data set first (File → Open or the Demos menu)."
        elif m is not None and m.needs_labels and ds.labels is None:
            reason = f"{m.title} needs class labels and '{ds.name}' has none."
        elif m is not None and m.name in method_restrictions(self.methods, ds):
            reason = method_restrictions(self.methods, ds)[m.name]
        else:
            reason = None
        self.panel.set_blocker(reason)

    def method_changed(self, name: str | None) -> None:
        if name:
            self.state.set_current_method(name)
            self.fit_defaults_to_data(name)
        self.update_blocker()

    def fit_defaults_to_data(self, name: str, append: bool = False) -> None:
        """A default that would leave the views empty on this data (a rank as large as the data's
        dimension: no residual, no SPE/T² limits) becomes the registry's data-aware default, and
        the Method panel says so. Values the user typed are left alone."""
        ds, m, form = self.state.dataset, self.methods.get(name), self.panel.form(name)
        if ds is None or m is None or form is None or (self.state.data_version, name) in self._fitted_defaults:
            return
        self._fitted_defaults.add((self.state.data_version, name))  # once per data set and method
        declared, current = m.defaults(), form.values()
        changed = {k: v for k, v in m.data_defaults(ds.n_samples, ds.n_features).items()
                   if current.get(k) == declared.get(k) and current.get(k) != v}
        if changed:
            form.set_values(changed)
            what = ", ".join(f"{k} = {v}" for k, v in changed.items())
            text = (f"{what} for {ds.name} ({ds.n_features} features): the default would "
                    f"leave no residual, so no SPE/T² limits or map.")
            self.panel.set_status(f"{self.panel.status.text()} {text}" if append else text)

    def _data_defaults(self, name: str, ds) -> dict:
        m = self.methods[name]
        out = m.defaults()
        if ds is not None:
            out.update(m.data_defaults(ds.n_samples, ds.n_features))
        return out

    def data_changed(self, ds) -> None:
        """Other data became current. Values set for the previous data set are put back to the
        new data's defaults, or kept when the user chose so (Run > Keep parameters for new
        data); either way the Method panel says what happened, and it no longer reports a run
        on the previous data (its result is gone from the views)."""
        prev, self._params_data = self._params_data, ds
        if ds is None:
            self.panel.set_status("Not run yet", done=False)
            return
        notes = [f"Data: {ds.name}."]
        # The same source read again (other loader options, a reload) is not other data.
        same = prev is not None and _source(prev) == _source(ds)
        if prev is not None and not same:
            keep = self.settings.keep_params_on_new_data()
            carried = {}
            for name, form in self.panel.built_forms().items():
                if name not in self.methods:
                    continue
                try:
                    values = form.values()
                except ValueError:
                    continue
                base = self._data_defaults(name, prev)
                diff = {k: v for k, v in values.items() if k in base and v != base[k]}
                if diff:
                    carried[name] = diff
                    if not keep:
                        form.reset()
                        self._fitted_defaults.discard((self.state.data_version, name))
            if carried:
                what = "; ".join(f"{self.methods[n].title}: " + ", ".join(f"{k} = {v}" for k, v in d.items())
                                 for n, d in carried.items())
                if keep:
                    notes.append(f"Parameters kept from {prev.name} ({what}); Run > Keep parameters for "
                                 f"new data chooses this.")
                else:
                    notes.append(f"Parameters set on {prev.name} were reset to the defaults ({what}); "
                                 f"Run > Keep parameters for new data keeps them instead.")
        self.panel.set_status(" ".join(notes), done=False)
        name = self.panel.method_name()
        if name:
            self.fit_defaults_to_data(name, append=True)

    def current_params(self, name: str | None = None) -> dict | None:
        """Validated parameters in the form of ``name`` (default: the chosen method), or None if invalid."""
        form = self.panel.form(name)
        if form is None:
            return None
        try:
            return self.methods[name or self.panel.method_name()].validate(form.values())
        except ValueError:
            return None

    def params_changed(self, name: str) -> None:
        """While a fit runs, warn (for as long as it is true) that its result will be discarded
        because its method's parameters no longer are the ones it runs with."""
        job = self.runner.current
        if job is not None and job.tag.method == name:
            stale = self.current_params(name) != job.tag.params
            self.panel.set_warning("Parameters changed: this run's result will be discarded. "
                                   "Press Run to use the new values." if stale else None)

    # -- starting and stopping --------------------------------------------------------------
    def run(self) -> Job | None:
        """Start the chosen method on the current data (cancelling a fit in flight).

        Returns the job, or None when Run is refused; the reason is then shown in the status bar
        and beside the Run button.
        """
        reason = self.panel.run_block_reason()
        if reason is not None:
            self.status(f"Cannot run: {reason}", 10000)
            return None
        name = self.panel.method_name()
        method = self.methods[name]
        params = self.current_params(name)
        ds = self.state.dataset
        replaced = self.runner.is_busy()
        if replaced:
            self._log(self.runner.current, "cancelled", "muted", detail="replaced by a new run")
        tag = FitTag(method=name, title=method.title, params=params, dataset=ds.name,
                     data_version=self.state.data_version)
        self.settings.set_method_params(name, params)
        self.settings.set_last_method(name)
        # A seed left on "auto" is fixed for the fit only (the form keeps "auto", so the stale
        # check still compares like with like): the result and any session saved from it record
        # the seed that was used, and replay gives the same numbers.
        from .session import pin_seed
        fit_params = pin_seed(method, params)
        bigdata = None
        if is_lazy_dataset(ds):
            bigdata = bigdata_settings(self.settings.memory_budget(), self.settings.scheduler(),
                                       results_dir(self.session_path()))
        if self.isolation == "process":
            # Registry methods travel by name; others (scripts, tests) as the Method itself.
            spec = name if METHODS.get(name) is method else method
            pool = shared_pool()
            # out of core, the result's large arrays come back mapped from files, not in memory
            fit = FitJob(spec, ds, fit_params, bigdata, spill=None if bigdata is None else working_dir())
            fn = lambda progress: pool.submit(fit, progress)  # noqa: E731
        else:
            fit = FitJob(method, ds, fit_params, bigdata)
            fn = lambda progress: run_job(fit, progress)  # noqa: E731
        job = self.runner.submit(fn, tag=tag)
        if replaced:   # the fit in flight was cancelled; a fit runs still, so no idle
            self.cancelled.emit()
        self.panel.set_status(f"Running {method.title} on {ds.name}…")
        # While the fit runs, the view its result goes to is built, so the turn the result
        # arrives in only fills it.
        self.views.prepare(getattr(method, "views", ()))
        return job

    def cancel(self) -> None:
        """Stop the fit in flight (the Cancel button)."""
        self._cancel(detail="")

    def cancel_for(self, why: str) -> None:
        """Cancel a fit in flight because of something else (new data, a session): logged with
        ``why``, and announced as any cancel is (``cancelled``, then ``idle``)."""
        self._cancel(detail=why)

    def _cancel(self, detail: str) -> None:
        job = self.runner.cancel()
        if job is None:
            return
        self._log(job, "cancelled", "muted", seconds=time.perf_counter() - job.submitted, detail=detail)
        self.panel.set_status(f"Cancelled: {detail}" if detail else "Cancelled", done=False)
        self.views.end_live()
        self.status(f"Cancelled {job.tag.title}" + (f" ({detail})" if detail else ""), 5000)
        self.cancelled.emit()
        self.idle.emit()

    # -- the answer -------------------------------------------------------------------------
    def _on_busy(self, busy: bool) -> None:
        self.panel.set_busy(busy)
        self.panel.set_warning(None)   # a new run, or none: the warning was about the last one
        if not busy:
            # Cancelled or replaced in any of the ways a run ends early: its provisional
            # pictures go. (After the event: a finished run's result is stored first.)
            QTimer.singleShot(0, self._drop_stale_live)

    def _drop_stale_live(self) -> None:
        job = self.runner.current
        self.views.end_live(keep=None if job is None else job.seq)

    def _on_partial(self, job: Job, frames) -> None:
        """A streaming fit finished more frames: the L + S view draws them, provisional."""
        if job.tag.data_version == self.state.data_version:
            self.views.show_live("decomposition", job.seq, job.tag.title, frames)

    def _stale_reason(self, job: Job, result) -> str | None:
        ds = self.state.dataset
        if ds is not None and self.state.data_version == job.tag.data_version:
            # The fit ran on this very object and hashed it already.
            self.state.adopt_fingerprint(result.data_fingerprint)
        if ds is None or self.state.data_version != job.tag.data_version \
                or result.data_fingerprint != self.state.data_fingerprint():
            return "the data set changed during the fit"
        if self.current_params(job.tag.method) != job.tag.params:
            return "the parameters were changed during the fit; press Run to use the new values"
        return None

    def _on_finished(self, job: Job, result) -> None:
        reason = self._stale_reason(job, result)
        if reason is not None:
            self._log(job, "discarded", "muted", seconds=job.elapsed, detail=reason)
            self.panel.set_status(f"Result discarded: {reason}", done=False)
            # The status bar may still announce an earlier run: say what became of this one.
            self.status(f"{job.tag.title}: result discarded ({reason})", 8000)
            self.views.end_live()
            self.discarded.emit(reason)
            self.idle.emit()
            return
        converged = result.decomposition.converged if result.decomposition is not None else None
        if converged is None:
            converged = getattr(result.estimator, "converged_", None)
        if converged is None:
            outcome, level = "finished", "ok"
        elif converged:
            outcome, level = "converged", "ok"
        else:
            outcome, level = "not converged", "warning"
        if result.warnings and level == "ok":
            level = "warning"
        self._log(job, outcome, level, seconds=result.elapsed, warnings=result.warnings,
                  evaluation=result.evaluation)
        self.state.set_current_method(result.method)
        self.state.add_result(result)
        self.views.end_live()   # after the result is stored: the view draws it in place
        text = f"{job.tag.title}: {outcome} in {result.elapsed:.2f}\u00a0s"
        if result.warnings:
            text += f" ({len(result.warnings)} warning{'s' if len(result.warnings) > 1 else ''}, see the log)"
        self.panel.set_status(text, done=True)
        self.status(text, 8000)
        # The views draw the result on the next turns of the event loop (no freeze): "finished"
        # means the user can see it, so it waits for them.
        self.views.when_drawn(lambda: (self.finished.emit(result), self.idle.emit()))

    def _on_failed(self, job: Job, message: str, details: str) -> None:
        self._log(job, "failed", "error", seconds=job.elapsed, detail=message)
        self.panel.set_status(f"Failed: {message}", done=False)
        self.views.end_live()
        self.show_error(f"{job.tag.title} failed", message, details)
        self.failed.emit(message)
        self.idle.emit()

    def _on_cancelled(self, job: Job) -> None:
        # The log line was written when Cancel was pressed; now the thread has really stopped.
        if not self.runner.is_busy():
            self.panel.set_status(f"Cancelled after {job.elapsed:.1f}\u00a0s", done=False)

    def log_reopened(self, session: str, dataset: str, results) -> None:
        """One Run log line per run of a reopened session (``results``: method -> RunResult in
        the session's order; a :class:`app.session.Reopened` also says whether each was
        reloaded or fitted again). Its time is the fit's own, when it was first run."""
        how = getattr(results, "how", {})
        for name, res in results.items():
            m = self.methods.get(name)
            self.run_log.add(LogEntry(
                method=m.title if m is not None else name, params=dict(res.params), dataset=dataset,
                outcome=how.get(name, "reopened"), seconds=res.elapsed, warnings=list(res.warnings),
                detail=f"from session {session}", level="warning" if res.warnings else "ok",
                evaluation=format_evaluation(res.evaluation)))

    def _log(self, job: Job | None, outcome: str, level: str, seconds: float | None = None,
             warnings=(), detail: str = "", evaluation=None) -> None:
        if job is None:
            return
        t = job.tag
        self.run_log.add(LogEntry(method=t.title, params=t.params, dataset=t.dataset,
                                  outcome=outcome, seconds=seconds, warnings=list(warnings),
                                  detail=detail, level=level, evaluation=format_evaluation(evaluation)))
