"""The lifecycle every background job row shares: RL runs, evaluations, long2short variants, grader audits,
prompt-set imports.

The state machine (every state has a way out; tests/workers/test_job_states.py walks each edge):

    queued ---claim (a worker's task)----------------------------> running
    queued ---cancel (user)--------------------------------------> cancelled
    running --the job function returns (worker)------------------> succeeded
    running --the job function raises (worker)-------------------> failed
    running --cancel (user), seen between steps (worker)---------> cancelled
    running --cancel (user) while the heartbeat is stale---------> cancelled at once
    running --heartbeat stale, no cancel (periodic recovery)-----> queued, and its task sent again
    running --heartbeat stale, claim (a redelivered task)--------> running on the new worker
    running --heartbeat stale for the JOB_MAX_LOST_WORKERS-th time, no cancel (periodic recovery) -> failed
    running --heartbeat stale, cancel pending (periodic recovery)-> cancelled
    running --cancel pending for JOB_CANCEL_GRACE_SECONDS: the heartbeat stops, then recovery -> cancelled
    failed, cancelled --resume (user; RL runs)-------------------> queued

A worker claims a row with one conditional UPDATE (exactly one caller wins); while the job runs, a
heartbeat thread stamps `heartbeat_at` every JOB_HEARTBEAT_SECONDS. Every worker runs the recovery
(workers/recovery.py) when it starts and then every JOB_RECOVERY_INTERVAL_SECONDS: a running row whose
heartbeat is older than JOB_STALE_AFTER_SECONDS belongs to a dead worker. A worker whose row was taken
from it (re-queued, then claimed by another) stops at its next check and records nothing: every write of
its results happens in `holding_claim` (the row locked, still this worker's running job) or through
`update_held`, and raises JobTakenOver otherwise. `started_at` keeps the first start; every claim is logged.

`lost_workers` counts the deaths of the workers that ran the row, each once: by the recovery that re-queues it,
or by the claim that takes it over while still running (a Celery redelivery after the worker was killed). A job
that kills its worker every time (the kernel's OOM killer) would otherwise loop for ever: the death that brings
the count to JOB_MAX_LOST_WORKERS fails the row instead (no claim takes a row that close to the limit; the
recovery fails it, with an error for the researcher). A resume resets the count.

A queued row's task goes to the broker after the row's commit (`create_queued`, `send_after_commit`); until
the broker took it, `unsent_since` says since when the row waits. A broker that is down leaves the row
queued, with a log line, and the recovery sends the task of every row still unsent SEND_GRACE_SECONDS later
(a second delivery is harmless: only one claim wins).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from datetime import timedelta
from typing import Callable, Iterator

from django.conf import settings
from django.db import models, transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Cast, Coalesce, Concat
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

logger = logging.getLogger(__name__)

# A launch hands its task to the broker right after its commit; a queued row still unsent this long after missed
# it (the broker was down, the web process died) and the recovery sends it.
SEND_GRACE_SECONDS = 30


def log_stamp() -> str:
    """The timestamp that opens a log line."""
    return f"{timezone.now():%Y-%m-%d %H:%M:%S}"


def stamped_line(line: str) -> str:
    """A log line with its timestamp and newline."""
    return f"{log_stamp()} {line.rstrip()}\n"


class JobTakenOver(Exception):
    """Raised in a worker whose claim is no longer the row's (by should_stop, holding_claim, update_held):
    recovery re-queued the row and another worker took it, or it ended. The worker stops at once and records
    nothing."""


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


TERMINAL_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """Abstract base of a row that a Celery task runs."""

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0, help_text="Fraction done, 0 to 1.")
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True, help_text="Host and process that claimed the job.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of the running job.")
    error = models.TextField(blank=True)
    traceback = models.TextField(blank=True)
    log = models.TextField(blank=True)
    unsent_since = models.DateTimeField(null=True, blank=True, help_text="Queued since then and its task not yet "
                                        "handed to the broker (null once sent); the recovery sends it.")
    lost_workers = models.PositiveSmallIntegerField(default=0, help_text="Times a worker died while running it (its "
                                                    "heartbeat went stale); at JOB_MAX_LOST_WORKERS it fails. An "
                                                    "RL run's resume, or its next checkpoint, resets it.")
    # what the error of a job failed by its dead workers tells the researcher to do (kinds that resume say so)
    retry_hint = "Launch it again to try again."

    class Meta:
        abstract = True

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @classmethod
    def stale_before(cls):
        """Running rows whose heartbeat is older than this belong to a dead worker."""
        return timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS)

    @classmethod
    def claimable(cls) -> Q:
        """Queued rows, and running rows abandoned by a dead worker (resumed where they stopped) unless that death
        is their JOB_MAX_LOST_WORKERS-th: the recovery fails those."""
        abandoned = Q(status=JobStatus.RUNNING, heartbeat_at__lt=cls.stale_before(),
                      lost_workers__lt=settings.JOB_MAX_LOST_WORKERS - 1)
        return (Q(status=JobStatus.QUEUED) | abandoned) & Q(cancel_requested=False)

    @classmethod
    def claim(cls, pk: int, worker: str) -> bool:
        """Move a claimable row to running; True for exactly one caller. The first start is kept; taking over an
        abandoned running row counts its dead worker (`lost_workers`) and logs it, in the same UPDATE."""
        now = timezone.now()
        was_abandoned = Q(status=JobStatus.RUNNING)  # SET expressions see the row as it was before the UPDATE
        claimed = cls.objects.filter(cls.claimable(), pk=pk).update(
            status=JobStatus.RUNNING, started_at=Coalesce(F("started_at"), Value(now)), heartbeat_at=now,
            worker=worker,
            lost_workers=Case(When(was_abandoned, then=F("lost_workers") + 1), default=F("lost_workers"),
                              output_field=models.PositiveSmallIntegerField()),
            log=Concat(F("log"), Case(When(was_abandoned, then=cls.taken_over_line()), default=Value(""),
                                      output_field=models.TextField()),
                       Value(stamped_line(f"started on {worker}")), output_field=models.TextField()),
        )
        return claimed == 1

    @staticmethod
    def taken_over_line() -> Concat:
        """The log line, as an SQL expression over the row before the claim's UPDATE, of a claim that takes over
        an abandoned running row: its dead worker and the count it brings `lost_workers` to."""
        lost_workers = Cast(F("lost_workers") + 1, models.TextField())
        return Concat(Value(f"{log_stamp()} worker "), F("worker"),
                      Value(f" lost: no heartbeat for {settings.JOB_STALE_AFTER_SECONDS} s (lost workers: "),
                      lost_workers, Value(f"; it fails at {settings.JOB_MAX_LOST_WORKERS}); taken over\n"),
                      output_field=models.TextField())

    @classmethod
    def heartbeat(cls, pk: int, worker: str | None = None) -> bool:
        """Stamp a sign of life; with `worker`, only while the row is still that worker's running job
        (False when it is not: recovery gave it to another worker, or it ended)."""
        rows = cls.objects.filter(pk=pk)
        if worker is not None:
            rows = rows.filter(status=JobStatus.RUNNING, worker=worker)
        return rows.update(heartbeat_at=timezone.now()) == 1

    @classmethod
    def recover_stale(cls, send: Callable[[int], None]) -> list[int]:
        """Running rows of dead workers (heartbeat older than JOB_STALE_AFTER_SECONDS): a pending cancel is
        finished as cancelled; the others count the death in `lost_workers` and go back to queued, `send(pk)`
        sending their task again in the same transaction (a failed send leaves the row running and stale, for
        the next pass), or fail when the death is their JOB_MAX_LOST_WORKERS-th. Returns the re-queued ids. Each
        move is a conditional UPDATE, so workers recovering at once never double a row or a count."""
        requeued = []
        stale = cls.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cls.stale_before())
        for pk, worker, cancel, lost_before in stale.values_list("pk", "worker", "cancel_requested", "lost_workers"):
            still_stale = cls.objects.filter(pk=pk, status=JobStatus.RUNNING, worker=worker, lost_workers=lost_before,
                                             heartbeat_at__lt=cls.stale_before())
            lost = f"worker {worker or '(unknown)'} lost: no heartbeat for {settings.JOB_STALE_AFTER_SECONDS} s"
            if cancel:
                if still_stale.update(status=JobStatus.CANCELLED, finished_at=timezone.now(),
                                      log=Concat(F("log"), Value(stamped_line(f"{lost}; cancelled as requested")))):
                    cls.objects.get(pk=pk).discard_inputs()
                continue
            lost_workers = lost_before + 1
            if lost_workers >= settings.JOB_MAX_LOST_WORKERS:
                cls.fail_lost(pk, still_stale, lost_workers, lost)
                continue
            counted = f"{lost} (lost workers: {lost_workers}; it fails at {settings.JOB_MAX_LOST_WORKERS})"
            with transaction.atomic():
                if still_stale.update(status=JobStatus.QUEUED, worker="", lost_workers=lost_workers,
                                      log=Concat(F("log"), Value(stamped_line(f"{counted}; re-queued")))):
                    send(pk)
                    requeued.append(pk)
        return requeued

    @classmethod
    def fail_lost(cls, pk: int, still_stale: models.QuerySet, lost_workers: int, lost: str) -> None:
        """Fail row `pk` (`still_stale`: it, while still stale; one conditional UPDATE) whose worker died for the
        `lost_workers`-th time, the limit: re-queued, it would loop for ever."""
        times = "once" if lost_workers == 1 else f"{lost_workers} times"
        error = (f"its worker died {times} while running it (killed from outside: most often the "
                 f"machine ran out of memory; see the worker's log). {cls.retry_hint}")
        if still_stale.update(status=JobStatus.FAILED, finished_at=timezone.now(), error=error, traceback="",
                              lost_workers=lost_workers,
                              log=Concat(F("log"), Value(stamped_line(f"{lost}; failed: {error}")))):
            logger.warning("%s %s failed: %s", cls.__name__, pk, error)
            cls.objects.get(pk=pk).discard_inputs()  # no worker runs it again

    @classmethod
    def create_queued(cls, send: Callable[[int], None], **fields) -> Job:
        """A new queued row whose task `send(pk)` hands to the broker after commit (see send_queued)."""
        row = cls.objects.create(unsent_since=timezone.now(), **fields)
        cls.send_after_commit(row.pk, send)
        return row

    @classmethod
    def send_after_commit(cls, pk: int, send: Callable[[int], None]) -> None:
        """Hand the queued row's task to the broker once the transaction that queued it commits."""
        transaction.on_commit(lambda: cls.send_queued(pk, send))

    @classmethod
    def send_queued(cls, pk: int, send: Callable[[int], None], log_failure: bool = True) -> bool:
        """`send(pk)`, then mark the row sent; False when the broker is unreachable: the row stays queued and
        unsent (a log line says so, unless `log_failure` is False) and the recovery sends it later."""
        try:
            send(pk)
        except (BrokerUnreachable, OSError) as error:
            logger.warning("%s %s: broker unreachable, its task is sent by the recovery later: %s",
                           cls.__name__, pk, error)
            if log_failure:
                cls.append_log(pk, f"not yet sent to the workers, the broker is unreachable ({error}): sent when "
                                   "it is back")
            return False
        cls.objects.filter(pk=pk).update(unsent_since=None)
        return True

    @classmethod
    def recover_unsent(cls, send: Callable[[int], None]) -> list[int]:
        """Queued rows whose task never reached the broker (unsent for SEND_GRACE_SECONDS): send it; returns the
        ids sent. Each row's stamp is moved first with a conditional UPDATE, so workers recovering at once send
        it once, and a row the broker still refuses waits SEND_GRACE_SECONDS before the next try."""
        sent = []
        overdue = timezone.now() - timedelta(seconds=SEND_GRACE_SECONDS)
        unsent = cls.objects.filter(status=JobStatus.QUEUED, cancel_requested=False, unsent_since__lt=overdue)
        for pk, since in unsent.values_list("pk", "unsent_since"):
            if not cls.objects.filter(pk=pk, status=JobStatus.QUEUED, unsent_since=since).update(
                    unsent_since=timezone.now()):
                continue  # claimed, cancelled or taken by another recovery meanwhile
            if cls.send_queued(pk, send, log_failure=False):
                cls.append_log(pk, "sent to the workers by the recovery (it had not reached the broker)")
                sent.append(pk)
        return sent

    @classmethod
    def finish(cls, pk: int, status: str, error: str = "", traceback: str = "", log_line: str = "",
               worker: str | None = None) -> bool:
        """Record a running job's terminal state (and its last log line, in the same UPDATE, so a reader that
        sees the status also sees the line); False when it was not running (with `worker`: not running
        under that worker)."""
        fields = {"status": status, "finished_at": timezone.now(), "error": error, "traceback": traceback}
        if status == JobStatus.SUCCEEDED:
            fields["progress"] = 1.0
        if log_line:
            fields["log"] = Concat(F("log"), Value(stamped_line(log_line)))
        rows = cls.objects.filter(pk=pk, status=JobStatus.RUNNING)
        if worker is not None:
            rows = rows.filter(worker=worker)
        return rows.update(**fields) == 1

    @classmethod
    def append_log(cls, pk: int, line: str) -> None:
        """Append one timestamped line to the row's log in a single UPDATE."""
        cls.objects.filter(pk=pk).update(log=Concat(F("log"), Value(stamped_line(line))))

    @classmethod
    def update_held(cls, pk: int, worker: str, **fields) -> None:
        """Write fields of a running job, with a heartbeat, in one UPDATE while the row is still `worker`'s
        running job; JobTakenOver (nothing written) when it is not."""
        held = cls.objects.filter(pk=pk, status=JobStatus.RUNNING, worker=worker)
        if not held.update(heartbeat_at=timezone.now(), **fields):
            raise JobTakenOver(f"{cls.__name__} {pk} is no longer a running job of {worker or 'no worker'}")

    @classmethod
    def log_alive(cls, pk: int, line: str, worker: str) -> None:
        """A progress line from `worker`'s running job: appended to the log with a heartbeat, in one UPDATE;
        JobTakenOver when the row is no longer that worker's."""
        cls.update_held(pk, worker, log=Concat(F("log"), Value(stamped_line(line))))

    @contextmanager
    def holding_claim(self) -> Iterator[None]:
        """A transaction that first locks the row (a conditional heartbeat UPDATE) while it is still this claim's
        running job: a job's results are written inside it, so a worker that lost its row (JobTakenOver) writes
        none of them, and the recovery cannot take the row while they are written."""
        model = type(self)
        with transaction.atomic():
            # a write first (a heartbeat), which locks the row; SQLite, which has no row locks, then holds the
            # write lock, where a read first would take a shared lock that a heartbeat's write turns into a
            # "database is locked" failure at this transaction's first write
            if not model.objects.filter(pk=self.pk, status=JobStatus.RUNNING, worker=self.worker).update(
                    heartbeat_at=timezone.now()):
                row = model.objects.filter(pk=self.pk).values_list("status", "worker").first()
                if row is None:
                    raise JobTakenOver(f"{model.__name__} {self.pk} was deleted")
                raise JobTakenOver(f"{model.__name__} {self.pk} is now {row[0]} on {row[1] or 'no worker'}")
            yield

    @classmethod
    def cancel_was_requested(cls, pk: int) -> bool:
        """Whether a user asked the job to stop (the job checks between its steps)."""
        return cls.objects.filter(pk=pk, cancel_requested=True).exists()

    def should_stop(self) -> bool:
        """Checked by the job between its steps: True when a user asked to cancel; JobTakenOver when this claim
        is no longer the row's (recovery re-queued it and another worker took it over, or it was deleted)."""
        row = type(self).objects.filter(pk=self.pk).values_list("cancel_requested", "status", "worker").first()
        if row is None:
            raise JobTakenOver(f"{type(self).__name__} {self.pk} was deleted")
        cancel, status, worker = row
        if worker != self.worker or (self.status == JobStatus.RUNNING and status != JobStatus.RUNNING):
            raise JobTakenOver(f"{type(self).__name__} {self.pk} is now {status} on {worker or 'no worker'}")
        return cancel

    def request_cancel(self) -> str:
        """Cancel a queued job at once; ask a running one to stop between its steps, or cancel it at once
        when its worker is gone (heartbeat stale)."""
        model = type(self)
        now = timezone.now()
        with transaction.atomic():
            if model.objects.filter(pk=self.pk, status=JobStatus.QUEUED).update(
                status=JobStatus.CANCELLED, cancel_requested=True, finished_at=now
            ):
                outcome = "cancelled"
            elif model.objects.filter(pk=self.pk, status=JobStatus.RUNNING, heartbeat_at__lt=model.stale_before()
                                      ).update(status=JobStatus.CANCELLED, cancel_requested=True, finished_at=now,
                                               log=Concat(F("log"), Value(stamped_line(
                                                   "cancelled: its worker is gone (no heartbeat)")))):
                outcome = "cancelled"
            elif model.objects.filter(pk=self.pk, status=JobStatus.RUNNING).update(cancel_requested=True):
                outcome = "cancel requested"
            else:
                outcome = "already finished"
        self.refresh_from_db()
        if outcome == "cancelled":  # no worker runs it (a running one finds its claim gone and writes nothing)
            self.discard_inputs()
        return outcome

    def discard_inputs(self) -> None:
        """Delete what the job kept only for its worker (an upload's stored file), once no worker will run it."""
