"""What the window remembers about a job it started, to judge the answer when it arrives.

A fit's result is stored only if the data and that method's parameters are still those the fit
started with (:class:`FitTag`); a load says what was loaded (:class:`LoadTag`); reopening a
session, where it came from (:class:`SessionTag`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FitTag:
    method: str          # registry name
    title: str           # shown in the log and the status line
    params: dict         # the validated form values the fit started with
    dataset: str         # the data set's name
    data_version: int    # AppState.data_version when the fit started


@dataclass(frozen=True)
class LoadTag:
    what: str            # "iris.csv", "demo 'iris'": for messages
    path: str | None = None
    demo: str | None = None


@dataclass(frozen=True)
class SessionTag:
    what: str
    session: str         # the session file's path
