"""Type stubs of the ``meshbed`` package (python/meshbed/__init__.py)."""

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

import pandas as pd

from ._meshbed import ScenarioError as ScenarioError

__version__: str

class Scenario:
    toml: str
    def __init__(self, toml_text: str) -> None: ...
    @classmethod
    def from_toml(cls, text: str) -> Scenario: ...
    @classmethod
    def from_file(cls, path: Union[str, os.PathLike[str]]) -> Scenario: ...
    @classmethod
    def builtin(cls, name: str = "default") -> Scenario: ...
    def __getitem__(self, key: str) -> Any: ...
    def __setitem__(self, key: str, value: Any) -> None: ...

@dataclass
class Experiment:
    toml: str
    file: str
    name: str
    @classmethod
    def builtin(cls, name: str) -> Experiment: ...
    @classmethod
    def from_file(cls, path: Union[str, os.PathLike[str]]) -> Experiment: ...
    @classmethod
    def from_toml(cls, text: str, file: str = ...) -> Experiment: ...
    @classmethod
    def load(cls, source: Union[str, os.PathLike[str], Experiment]) -> Experiment: ...

@dataclass
class Report:
    raw: Dict[str, Any]
    flows: pd.DataFrame
    mac: pd.DataFrame
    net: pd.DataFrame
    traces: pd.DataFrame
    route_log: pd.DataFrame
    @property
    def seed(self) -> int: ...
    @property
    def trace_hash(self) -> str: ...
    def __repr__(self) -> str: ...

def experiments() -> Dict[str, str]: ...
def protocol_styles() -> Dict[str, Dict[str, str]]: ...
def run(
    scenario: Union[Scenario, os.PathLike[str]], seed: Optional[int] = None, progress: Optional[bool] = None
) -> Report: ...
def sweep(
    experiment: Union[str, os.PathLike[str], Experiment],
    repetitions: Optional[int] = None,
    backend: str = "local",
    progress: bool = True,
    jobs: Optional[int] = None,
    force: bool = False,
    max_retries: int = 3,
    store: Optional[Union[str, os.PathLike[str]]] = None,
) -> pd.DataFrame: ...
