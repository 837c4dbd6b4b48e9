"""The chunk loop shared by the decoder and the scorer: read a chunk, process it, append its
output lines, report progress over the whole input; continue where the output says a previous
run stopped (resume.ResumableOutput) or stream (resume.StreamOutput)."""
import sys

from t2t_lite.progress_line import ProgressLine


def run_chunks(line_input, output, chunk_lines, process, verb, unit, stream=sys.stderr):
    """For each chunk of `line_input` after output.lines_done: `process(lines, progress)` returns
    one output line per input item (progress(k): k of this chunk's items are done), and the
    lines are appended to `output`. Finishes `output` at the end."""
    done = output.lines_done
    total = line_input.total_lines
    progress_line = ProgressLine(verb, unit, total=total, initial=done, stream=stream)
    if done:
        print(f"resuming after {done} {unit} already in the output", file=stream, flush=True)

    def progress(chunk_done):
        detail = None if total is not None else f"{line_input.bytes_read:,} bytes read"
        progress_line(done + chunk_done, detail=detail)

    for lines, offset in line_input.chunks(chunk_lines, lines_done=done, offset=output.offset):
        outputs = process(lines, progress)
        assert len(outputs) == len(lines)
        output.append(outputs, offset)
        done += len(lines)
        progress(0)  # a chunk of empty lines reports nothing itself
    output.finish()
