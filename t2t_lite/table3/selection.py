"""--rows: set names, group letters or "all" -> row names in the paper's order."""
from t2t_lite.errors import UserError
from t2t_lite.table3.paper import GROUPS, PAPER_BY_ROW, ROWS

def select_rows(spec):
    """--rows (comma-separated set names under table3/, group letters A-E, "base" or "all";
    empty: all) -> row names in the paper's order. Unknown names are a UserError."""
    tokens = [t.strip() for t in (spec or "all").split(",") if t.strip()]
    chosen, unknown = set(), []
    for token in tokens:
        if token == "all":
            chosen.update(ROWS)
        elif token in ROWS:
            chosen.add(token)
        elif token.upper() in GROUPS[1:] and len(token) == 1:
            chosen.update(r for r in ROWS if PAPER_BY_ROW[r].group == token.upper())
        else:
            unknown.append(token)
    if unknown:
        raise UserError(f"unknown Table 3 row{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))}; known: all, A, B, C, D, E, "
                        f"{', '.join(ROWS)}")
    if not chosen:
        raise UserError("--rows selects no row")
    return [r for r in ROWS if r in chosen]
