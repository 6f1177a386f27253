"""Side panels of the main window: data set, method (parameter form, Run/Cancel) and run log."""
from .dataset_panel import DatasetPanel
from .method_panel import MethodPanel
from .param_form import ParamForm
from .run_log import LogEntry, RunLog

__all__ = ["DatasetPanel", "MethodPanel", "ParamForm", "RunLog", "LogEntry"]
