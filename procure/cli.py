"""The command line: the only module that prints or exits. Heavy imports happen inside commands."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

EXIT_OK, EXIT_INPUT, EXIT_POLICY, EXIT_INTERNAL = 0, 1, 2, 3   # EXIT_POLICY: PolicyError, documented by gen_docs
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
F = TypeVar("F", bound=Callable[..., Any])


class State:
    def __init__(self, quiet: bool, verbose: bool):
        self.quiet = quiet
        self._verbose = False
        self.verbose = verbose

    @property
    def verbose(self) -> bool:
        return self._verbose

    @verbose.setter
    def verbose(self, value: bool) -> None:
        """--verbose also shows notes such as an ignored catalog cache entry, on stderr."""
        import logging

        self._verbose = value
        notes = logging.getLogger("procure.cache")
        if value and not notes.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("note: %(message)s"))
            notes.addHandler(handler)
            notes.setLevel(logging.INFO)

    def console(self, stderr: bool = False) -> Console:
        from rich.console import Console

        return Console(stderr=stderr, no_color="NO_COLOR" in os.environ, highlight=False,
                       quiet=self.quiet and not stderr)


def _echo(message: object, err: bool = False) -> None:
    """Print text that may hold input (file names, titles, messages): control characters and escape
    sequences removed, one problem per line kept."""
    from procure.report.terminal import clean_lines

    click.echo(clean_lines(message), err=err)


def _fail(state: State, exc: BaseException) -> NoReturn:
    """Map every error to one line per problem and an exit code; tracebacks only with --verbose."""
    from procure.errors import ProcureError

    if isinstance(exc, ProcureError):
        _echo(str(exc), err=True)
        sys.exit(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        click.echo("interrupted; nothing partial was written", err=True)
        sys.exit(130)
    if isinstance(exc, BrokenPipeError):   # `procure ... | head`: the reader has seen enough
        _silence_stdout()
        sys.exit(EXIT_OK)
    if isinstance(exc, (OSError, UnicodeEncodeError)) and _environment_problem(exc):
        sys.exit(EXIT_INPUT)
    if state.verbose:
        import traceback

        traceback.print_exception(exc)
    _echo(f"procure: internal error: {type(exc).__name__}: {exc} "
          "(this is a bug; rerun with --verbose for details)", err=True)
    sys.exit(EXIT_INTERNAL)


_ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EIO", "EFBIG", "EROFS", "ENAMETOOLONG", "EACCES", "EPERM", "ENXIO", "ELOOP")
    if hasattr(errno, name))


def _environment_problem(exc: OSError | UnicodeEncodeError) -> bool:
    """The machine, not procure: a full disk or stdout on /dev/full, a name too long, a terminal
    whose encoding cannot show the text. Told in one line (exit 1); False for anything else."""
    if isinstance(exc, UnicodeEncodeError):
        why = (f"the terminal's character set ({exc.encoding}) cannot show procure's output; "
               "set a UTF-8 locale (e.g. LC_ALL=C.UTF-8) or PYTHONIOENCODING=utf-8")
    elif exc.errno in _ENVIRONMENT_ERRNOS:
        where = str(exc.filename)[:120] if exc.filename else "its output"
        why = f"cannot write {where}: {exc.strerror or exc}"
    else:
        return False
    _silence_stdout()   # the flush at exit must not fail a second time
    try:
        click.echo(f"procure: {why}; stopped (a report already listed as written is complete)", err=True)
    except (OSError, UnicodeEncodeError):
        pass
    return True


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _run(ctx: click.Context, action: Callable[[State], None]) -> None:
    state: State = ctx.obj
    try:
        action(state)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - the one place errors become exit codes
        _fail(state, exc)


def _emit_json(obj: object) -> None:
    from procure.jsontext import to_json_bytes

    sys.stdout.buffer.write(to_json_bytes(obj))
    sys.stdout.flush()


def _show(state: State, fmt: str, result: object, view: str) -> None:
    """JSON for machines, or the named terminal view of procure.cli_views for people."""
    if fmt == "json":
        _emit_json(result)
    elif not state.quiet:
        from procure import cli_views

        getattr(cli_views, view)(result, state.console())


def _progress(state: State, label: str) -> tuple[Progress | None, Callable[[int, int], None] | None]:
    """A rich progress callback (done, total) for long work; silent when quiet or not a terminal."""
    if state.quiet or not sys.stderr.isatty():
        return None, None
    from rich.progress import Progress

    progress = Progress(transient=True, console=state.console(stderr=True))
    task = progress.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


def _replace_unencodable() -> None:
    """Under a non-UTF-8 locale (LC_ALL=C without C.UTF-8, ISO-8859-1) the terminal text is
    shown with what its character set lacks replaced, instead of failing mid-way."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        reconfigure = getattr(stream, "reconfigure", None)
        if encoding not in ("utf8", "utf8sig") and reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (OSError, ValueError):
                pass


class ProcureGroup(click.Group):
    """Usage mistakes are bad input (exit 1), not click's default 2, which means --fail-on here."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        _replace_unencodable()
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            if isinstance(code, int) and code:   # ctx.exit(n) from a callback
                sys.exit(code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(EXIT_INPUT)
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            sys.exit(EXIT_INPUT)
        sys.exit(EXIT_OK)


@click.group(cls=ProcureGroup, context_settings=CONTEXT)
@click.version_option(package_name="procure")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option("-v", "--verbose", is_flag=True, help="More detail; tracebacks on internal errors.")
@click.pass_context
def main(ctx: click.Context, quiet: bool, verbose: bool) -> None:
    """procure: compare bids for GPU training capacity by step time, cost and time to train.

    \b
    Start with:   procure quote examples/cluster.yaml
    Check inputs: procure validate cluster.yaml
    Exit codes:   0 ok, 1 bad input (nothing written), 2 --fail-on tripped or acceptance failed,
                  3 internal error.
    """
    ctx.obj = State(quiet, verbose)


def _state(ctx: click.Context) -> State:
    """The State the group made (its callback runs before a command's options are parsed)."""
    state = ctx.find_object(State)
    if state is None:
        raise click.UsageError("procure's commands run under `procure`")
    return state


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        _state(ctx).quiet = True
    return value


def _set_verbose(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        _state(ctx).verbose = True
    return value


def common(command: F) -> F:
    """-q/-v accepted after the command name too (`procure quote x.yaml -q`)."""
    command = click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                           help="Print only errors.")(command)
    return click.option("-v", "--verbose", is_flag=True, expose_value=False, callback=_set_verbose,
                        help="More detail; tracebacks on internal errors.")(command)


def _output_format(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A bad --format is one line with a suggestion and exit 1, like every other bad input."""
    if value not in ("text", "json"):
        from procure.sources.suggest import suggest

        _echo(f"--format: error[bad-format]: unknown format {value!r}; use text or json"
              f"{suggest(value, ['text', 'json'])}", err=True)
        ctx.exit(EXIT_INPUT)
    return value


FORMAT_JSON = click.option("--format", "fmt", default="text", show_default=True, callback=_output_format,
                           metavar="[text|json]", help="Output for people or for machines.")
ALLOW_PATH = click.option("--allow-path", "allow_paths", multiple=True, type=click.Path(path_type=Path),
                          help="Also allow measured logs under this folder (repeatable).")
BID_PAGES = click.option("--bid-pages", "bid_pages", metavar="all|none|top:N", default=None,
                         help="Bids with a detail page in the PDF and HTML. Default: all up to 50 bids, "
                              "else top:10 (the summary says so).")
PRICE_BOOKS = click.option("--price-books", "price_books", multiple=True,
                           type=click.Path(path_type=Path, file_okay=False),
                           help="A folder of your own price books, read like the shipped ones (repeatable).")
RESPONSES = click.option("--responses", "responses", type=click.Path(path_type=Path, file_okay=False), default=None,
                         help="A folder of vendors' filled response forms (.xlsx, .yaml) to quote as bids too.")


@main.command(context_settings=CONTEXT)
@common
@click.argument("cluster", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=Path("reports"),
              show_default=True, help="Folder for the reports.")
@click.option("--format", "formats", default="pdf,xlsx,json", show_default=True,
              help="Comma-separated: pdf, xlsx, json, html.")
@click.option("--fail-on", "fail_on", default="", help="Exit 2 when any bid carries one of these flags "
              "(comma-separated, e.g. impossible,sla-breach).")
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Your own report templates folder (rendered sandboxed).")
@click.option("--lang", type=click.Choice(["en", "zh-TW"]), default="en", show_default=True)
@click.option("--page-size", type=click.Choice(["A4", "Letter"]), default="A4", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing reports of the same name.")
@click.option("--basis", type=click.Choice(["present_value", "run", "commitment"]), default=None,
              help="The cost basis that ranks: present_value (dated cash over one horizon, discounted), run "
                   "(the economic cost of this job on an amortised cluster) or commitment (the terms committed "
                   "to, costed to the end of the run, undiscounted). Default: workload.cost_basis, else "
                   "present_value.")
@BID_PAGES
@PRICE_BOOKS
@RESPONSES
@ALLOW_PATH
@click.pass_context
def quote(ctx: click.Context, cluster: Path, out_dir: Path, formats: str, fail_on: str, templates_dir: Path | None,
          lang: str, page_size: str, force: bool, basis: str | None, bid_pages: str | None,
          price_books: tuple[Path, ...], responses: Path | None, allow_paths: tuple[Path, ...]) -> None:
    """Validate, model or ingest every bid, compare them, and write the reports."""

    def action(state: State) -> None:
        from procure import api

        _warn_fonts(state, lang, formats)
        progress, update = _progress(state, "quoting")
        with progress or nullcontext():
            result = api.quote(cluster, out_dir=out_dir, formats=_split(formats), templates_dir=templates_dir,
                               lang=lang, page_size=page_size, force=force, allow_paths=list(allow_paths),
                               fail_on=_split(fail_on), progress=update, basis=basis,
                               price_books=list(price_books), bid_pages=bid_pages, responses=responses)
        if not state.quiet:
            from procure.report import render_terminal

            render_terminal(result.document, state.console(), lang=lang)
            _wrote(state, result.written)
        result.check_policy()

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("cluster", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=Path("reports"),
              show_default=True, help="Folder for the request and the response forms.")
@click.option("--lang", type=click.Choice(["en", "zh-TW"]), default="en", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing files of the same name.")
@click.pass_context
def rfq(ctx: click.Context, cluster: Path, out_dir: Path, lang: str, force: bool) -> None:
    """Write the request for quotation and the vendors' response forms for the workload."""

    def action(state: State) -> None:
        from procure import api

        _warn_fonts(state, lang, "pdf")
        _wrote(state, api.rfq(cluster, out_dir, lang=lang, force=force))

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("cluster", type=click.Path(path_type=Path))
@FORMAT_JSON
@PRICE_BOOKS
@RESPONSES
@ALLOW_PATH
@click.pass_context
def validate(ctx: click.Context, cluster: Path, fmt: str, price_books: tuple[Path, ...], responses: Path | None,
             allow_paths: tuple[Path, ...]) -> None:
    """Check cluster.yaml (or a sweep.yaml) against the schema, the catalog and the price books."""

    def action(state: State) -> None:
        from procure import api
        from procure.errors import InputError

        try:
            api.validate(cluster, allow_paths=list(allow_paths), price_books=list(price_books), responses=responses)
        except InputError as exc:
            if fmt == "json":
                _emit_json({"schema": "procure.validate/v1", "ok": False,
                            "problems": [d.__dict__ for d in exc.diagnostics]})
                sys.exit(EXIT_INPUT)
            raise
        if fmt == "json":
            _emit_json({"schema": "procure.validate/v1", "ok": True, "problems": []})
        elif not state.quiet:
            _echo(f"{cluster}: ok")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("cluster", type=click.Path(path_type=Path))
@click.option("--bid", "bid_id", help="Only this bid.")
@FORMAT_JSON
@ALLOW_PATH
@click.pass_context
def estimate(ctx: click.Context, cluster: Path, bid_id: str | None, fmt: str, allow_paths: tuple[Path, ...]) -> None:
    """The step-time breakdown and the plan of each bid."""

    def action(state: State) -> None:
        from procure import api

        result = api.estimate(cluster, bid_id=bid_id, allow_paths=list(allow_paths))
        _show(state, fmt, result, "render_estimate")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("runs", type=click.Path(path_type=Path))
@FORMAT_JSON
@click.pass_context
def backtest(ctx: click.Context, runs: Path, fmt: str) -> None:
    """Predict published runs (step times or whole-run GPU-hours) and report the error and MAPE."""

    def action(state: State) -> None:
        from procure import api

        result = api.backtest(runs)
        _show(state, fmt, result, "render_backtest")

    _run(ctx, action)


def _list_formats(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from procure.measure.formats import LOG_FORMATS

    width = max(len(f.name) for f in LOG_FORMATS)
    for f in LOG_FORMATS:
        click.echo(f"{f.name:<{width}}  {f.summary}")
    ctx.exit(EXIT_OK)


@main.command(context_settings=CONTEXT)
@common
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--list-formats", is_flag=True, is_eager=True, expose_value=False, callback=_list_formats,
              help="List the log formats (the names --log-format takes) and exit.")
@click.option("--log-format", "log_format", help="Force a log format (one of `--list-formats`).")
@click.option("--scheduler", help="Summarise per-rank tables on Dask: 'local' or tcp://HOST:PORT.")
@FORMAT_JSON
@click.pass_context
def ingest(ctx: click.Context, logs: tuple[Path, ...], log_format: str | None, scheduler: str | None,
           fmt: str) -> None:
    """Read measured step times from training logs and traces (format detected)."""

    def action(state: State) -> None:
        from procure import api

        progress, update = _progress(state, "ingesting")
        with progress or nullcontext():
            result = api.ingest(list(logs), fmt=log_format, scheduler=scheduler, progress=update)
        _show(state, fmt, result, "render_ingest")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("what", type=click.Choice(["list", "show"]), default="list")
@click.argument("entry_id", required=False)
@click.option("--kind", type=click.Choice(["all", "accelerators", "networks", "models", "price-books"]),
              default="all", show_default=True)
@FORMAT_JSON
@click.pass_context
def catalog(ctx: click.Context, what: str, entry_id: str | None, kind: str, fmt: str) -> None:
    """Browse accelerators, networks, model presets and price books."""

    def action(state: State) -> None:
        from procure import api

        result: object
        if what == "show":
            if not entry_id:
                raise click.UsageError("`procure catalog show ID` needs an id")
            result = api.catalog_show(entry_id)
        else:
            result = api.catalog_list(kind)
        _show(state, fmt, result, "render_catalog")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("result_json", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=Path("reports"), show_default=True)
@click.option("--format", "formats", default="pdf,xlsx", show_default=True)
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--lang", type=click.Choice(["en", "zh-TW"]), default="en", show_default=True)
@click.option("--page-size", type=click.Choice(["A4", "Letter"]), default="A4", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing reports of the same name.")
@BID_PAGES
@click.pass_context
def render(ctx: click.Context, result_json: Path, out_dir: Path, formats: str, templates_dir: Path | None, lang: str,
           page_size: str, force: bool, bid_pages: str | None) -> None:
    """Re-render a saved result (procure.quote/v2 JSON, or v1) without recomputing."""

    def action(state: State) -> None:
        from procure import api

        _warn_fonts(state, lang, formats)
        written = api.render_saved(result_json, out_dir=out_dir, formats=_split(formats),
                                   templates_dir=templates_dir, lang=lang, page_size=page_size, force=force,
                                   bid_pages=bid_pages)
        if not state.quiet:
            _wrote(state, written)

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@FORMAT_JSON
@click.pass_context
def diff(ctx: click.Context, old: Path, new: Path, fmt: str) -> None:
    """What changed between two rounds of bids (two saved quote JSON files)."""

    def action(state: State) -> None:
        from procure import api

        result = api.diff(old, new)
        _show(state, fmt, result, "render_diff")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("sweep_file", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=Path("reports"),
              show_default=True, help="Folder for the reports and the partial results of a running sweep.")
@click.option("--write", "formats", default="pdf,xlsx,json,parquet", show_default=True,
              help="Reports to write, comma-separated: pdf, html, xlsx, json, parquet ('' for none).")
@FORMAT_JSON
@click.option("--scheduler", help="Run on Dask: 'local' (a LocalCluster on this machine) or the "
              "tcp://HOST:PORT of a running scheduler (its workers need procure installed).")
@click.option("--workers", type=click.IntRange(1, 4096),
              help="Processes (default: every core; with --scheduler local: 2 Dask workers).")
@click.option("--fresh", is_flag=True, help="Discard the partial results of an interrupted run instead of resuming.")
@click.option("--emit-cluster", "emit_point", metavar="POINT",
              help="Print the cluster.yaml of one point (e.g. p0042) and exit; `procure quote` on it "
              "reports that point's figures.")
@click.option("--page-size", type=click.Choice(["A4", "Letter"]), default="A4", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing reports of the same name.")
@click.pass_context
def sweep(ctx: click.Context, sweep_file: Path, out_dir: Path, formats: str, fmt: str, scheduler: str | None,
          workers: int | None, fresh: bool, emit_point: str | None, page_size: str, force: bool) -> None:
    """Before the RFQ: the cost/time frontier across accelerators, GPU counts and price terms,
    and what to ask for."""

    def action(state: State) -> None:
        from procure import api

        if emit_point:
            click.echo(api.sweep_cluster(sweep_file, emit_point), nl=False)
            return
        progress, update = _progress(state, "sweeping")
        try:
            with progress or nullcontext():
                result = api.sweep(sweep_file, out_dir, _split(formats), scheduler=scheduler, workers=workers,
                                   fresh=fresh, force=force, page_size=page_size, progress=update)
        except KeyboardInterrupt:
            click.echo(f"interrupted; finished points are kept under {out_dir}/ (*.parts): "
                       "run the same command again to resume", err=True)
            sys.exit(130)
        run = result.run
        if fmt == "json":
            _emit_json(run.document.to_data())
            return
        if not state.quiet:
            from procure.report.sweep import print_sweep_terminal

            print_sweep_terminal(run.document, state.console())
            seconds = run.timings_s.get("evaluate", 0.0)
            rate = f" ({run.computed_points / seconds:,.0f} points/s)" if seconds and run.computed_points else ""
            resumed = f", {run.points - run.computed_points:,} resumed" if run.computed_points < run.points else ""
            click.echo(f"{run.points:,} points in {seconds:.1f} s{rate}{resumed}")
            for path in result.written:
                click.echo(f"wrote {path}")

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("cluster", type=click.Path(path_type=Path))
@click.option("--bid", "bid_id", required=True, help="The bid whose commitments the burn-in tests.")
@click.option("-o", "--out", "out_dir", type=click.Path(path_type=Path), default=Path("reports"),
              show_default=True, help="Folder for the spec (YAML) and its PDF page.")
@click.option("--lang", type=click.Choice(["en", "zh-TW"]), default="en", show_default=True)
@click.option("--page-size", type=click.Choice(["A4", "Letter"]), default="A4", show_default=True)
@click.option("--force", is_flag=True, help="Overwrite an existing spec of the same name.")
@PRICE_BOOKS
@ALLOW_PATH
@click.pass_context
def acceptance(ctx: click.Context, cluster: Path, bid_id: str, out_dir: Path, lang: str, page_size: str,
               force: bool, price_books: tuple[Path, ...], allow_paths: tuple[Path, ...]) -> None:
    """A bid's commitments as a burn-in protocol: the job, steps, thresholds, evidence, credits."""

    def action(state: State) -> None:
        from procure import api

        _warn_fonts(state, lang, "pdf")
        written = api.acceptance(cluster, bid_id, out_dir, lang=lang, page_size=page_size, force=force,
                                 allow_paths=list(allow_paths), price_books=list(price_books))
        if not state.quiet:
            _wrote(state, written)

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@common
@click.argument("spec", type=click.Path(path_type=Path))
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--log-format", "log_format", help="Force a log format, as `procure ingest` takes it.")
@FORMAT_JSON
@click.pass_context
def accept(ctx: click.Context, spec: Path, logs: tuple[Path, ...], log_format: str | None, fmt: str) -> None:
    """Check burn-in logs against an acceptance spec: exit 0 pass, 2 a threshold breached."""

    def action(state: State) -> None:
        from procure import api
        from procure.errors import PolicyError

        result = api.accept(spec, list(logs), fmt=log_format)
        _show(state, fmt, result.to_data(), "render_acceptance")
        breaches = result.breaches()
        if breaches:
            raise PolicyError("acceptance failed: " + "; ".join(f.message for f in breaches))

    _run(ctx, action)


@main.command(context_settings=CONTEXT)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script (e.g. `eval "$(procure completion bash)"`)."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:   # click.Choice lets through only the shells click completes
        raise click.BadParameter(f"no completion for {shell}")
    click.echo(cls(main, {}, "procure", "_PROCURE_COMPLETE").source())


def _wrote(state: State, paths: Sequence[Path]) -> None:
    """One "wrote PATH" line per report, the path whole (scripts read these lines)."""
    for path in paths:
        _echo(f"wrote {path}")


def _warn_fonts(state: State, lang: str, formats: str) -> None:
    """A PDF in a language whose font is missing renders boxes: say so before, on stderr."""
    if state.quiet or "pdf" not in _split(formats):
        return
    from procure.report.fonts import missing_font

    warning = missing_font(lang)
    if warning:
        _echo(warning, err=True)


def _split(text: str) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


if __name__ == "__main__":  # pragma: no cover
    main()
