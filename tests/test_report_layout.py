"""How the report sets a table or figure on its page (src/osfl/reporting/layout.py): tables that would need type
below 7 pt are split into column groups that fit, and captions longer than three lines keep their lead, the rest
moving to a note."""
import re

from osfl.reporting import layout
from osfl.reporting.book import _table


def _table_tex(columns: int, cell: str = "61.00 $\\pm$ 1.00 (n=3) / 77.20 (-16.20)", caption: str = "Short.") -> str:
    head = " & ".join(["method"] + [f"col{j}" for j in range(1, columns + 1)]) + " \\\\"
    rows = [" & ".join([f"row{i}"] + [cell.replace("77.20", f"7{i}.{j:02d}") for j in range(1, columns + 1)])
            + " \\\\" for i in range(3)]
    return ("\\begin{table}\n\\centering\n\\caption{" + caption + "}\n\\label{tab:x}\n\\begin{tabular}{l"
            + "l" * columns + "}\n\\toprule\n" + head + "\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabular}\n\\end{table}\n")


def _tabulars(tex: str) -> list[str]:
    return re.findall(r"\\begin\{tabular\}\{[a-z|]+\}\n.*?\n\\end\{tabular\}", tex, flags=re.S)


def test_a_table_too_wide_for_7pt_is_split_into_groups_that_fit():
    tex = _table_tex(12)
    assert layout.natural_width(tex) > layout.LINE_PT / layout.MIN_SCALE  # one piece would need < 7-pt type
    out = layout.split_wide(tex)
    parts = _tabulars(out)
    assert len(parts) >= 3
    for part in parts:
        assert layout.natural_width(part) <= layout.LINE_PT / layout.MIN_SCALE
        assert part.count("row0") == 1 and "method" in part  # the row labels and the header repeat in each group
    # every cell is set exactly once
    for i in range(3):
        for j in range(1, 13):
            assert out.count(f"7{i}.{j:02d}") == 1
    assert out.count("\\caption{") == 1


def test_a_table_that_fits_is_left_as_it_is():
    tex = _table_tex(2)
    assert layout.natural_width(tex) < layout.LINE_PT
    assert layout.split_wide(tex) == tex


def test_visible_text_leaves_latex_commands_out():
    assert layout.visible("\\textbf{61.00} $\\pm$ 1.00") == "61.00 x 1.00"


def test_a_long_caption_keeps_its_lead_and_the_rest_moves_to_a_note():
    first = "Table 1, MNIST columns, cpu profile: ours / the paper's (\\textbf{bold: best; ours}). "
    caption = first + " ".join(f"Reduction {k}: epochs x0.1 for every data-free method at this profile." for k in range(12))
    lead, rest = layout.short_caption(caption)
    assert len(layout.visible(lead)) <= layout.CAPTION_CHARS and rest
    assert lead.startswith(first.strip()) and lead.endswith((".", ";", ":"))
    assert (lead + " " + rest).split() == caption.split()  # nothing lost
    assert lead.count("{") == lead.count("}")  # never cut inside a brace group
    assert layout.short_caption("Short one.") == ("Short one.", "")
    # no sentence end within the limit: the first words and an ellipsis
    lead, rest = layout.short_caption("word " * 100)
    assert lead.endswith("\u2026") and len(layout.visible(lead)) <= layout.CAPTION_CHARS and rest.startswith("\u2026")


def test_the_report_sets_tables_fitted_with_short_captions():
    caption = "Lead sentence of the caption. " + "More detail about the settings in force here. " * 20
    out = _table(_table_tex(12, caption=caption))
    assert "\\begin{table}[H]" in out and out.count("\\fitwidth{") == len(_tabulars(out)) >= 3
    lead = out[out.index("\\caption{") + 9:out.index("}", out.index("\\caption{"))]
    assert len(layout.visible(lead)) <= layout.CAPTION_CHARS
    assert "{\\footnotesize More detail" in out and out.index("{\\footnotesize More detail") < out.index("\\end{table}")


def test_a_narrow_figure_is_enlarged_at_most_1_4_times(tmp_path):
    from matplotlib.figure import Figure

    from osfl.reporting.figures import save_figure

    narrow, wide = Figure(figsize=(3, 2)), Figure(figsize=(12, 3))
    narrow.subplots().plot([0, 1], [0, 1])
    wide.subplots().plot([0, 1], [0, 1])
    small, big = save_figure(narrow, tmp_path / "narrow")[1], save_figure(wide, tmp_path / "wide")[1]
    width = float(layout.figure_width(small).removesuffix("pt"))
    assert 3 * 72 * 0.9 * layout.MAX_ENLARGE < width < 3 * 72 * 1.05 * layout.MAX_ENLARGE  # tight bbox: about 3 in
    assert layout.figure_width(big) == "\\linewidth"


def test_long_settings_notes_move_to_the_section_end_once_each():
    long_note = "Profile cpu. Reductions: " + "local.epochs=20 (200 local epochs would take 1.9 h); " * 12
    table = "\\begin{table}\n\\caption{T.}\n\\begin{tabular}{ll}\na & b \\\\\n\\end{tabular}\n\\par\\smallskip\n{\\footnotesize " \
        + long_note + "\\par}\n\\end{table}\n"
    short = table.replace(long_note, "Seeds 0, 1, 2.")
    notes = layout.Notes()
    first, second = notes.move(table, "table1"), notes.move(table, "table2")
    assert long_note not in first and "note S1 at the end of this section" in first and first == second
    assert notes.move(short, "table3") == short  # a short note stays under its table
    section = "\n".join(notes.section("Settings"))
    assert section.count(long_note.strip()) == 1 and "(table1, table2)" in section
    assert layout.Notes().section("Settings") == []


def test_rows_without_a_number_of_ours_are_left_out_and_named():
    tex = ("\\begin{table}\n\\caption{T.}\n\\begin{tabular}{lll}\n\\toprule\n & A & B \\\\\n\\midrule\n"
           "MNIST, 0.05 & --- / 55.38 & --- / 58.05 \\\\\nSVHN, 0.1 & --- / 39.29 & --- / 57.13 \\\\\n"
           "Fashion-MNIST, dir0.1 & 63.78 / --- & --- / --- \\\\\n\\bottomrule\n\\end{tabular}\n\\end{table}\n")
    out = layout.drop_unrun_rows(tex)
    assert "MNIST, 0.05 &" not in out and "SVHN, 0.1 &" not in out and "Fashion-MNIST, dir0.1 & 63.78" in out
    assert "rows without a number of ours are left out: MNIST, 0.05; SVHN, 0.1." in out
    assert out.index("left out") < out.index("\\end{table}")
    only_paper = tex.replace("63.78 / ---", "--- / ---")
    assert layout.drop_unrun_rows(only_paper) is None  # nothing of ours: the report lists the table's state
    assert layout.drop_unrun_rows(tex.replace("--- / 55.38", "1.00 / 55.38")).count("left out: SVHN, 0.1.") == 1
