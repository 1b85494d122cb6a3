"""Stage `book` of report/ (``make report``): one PDF of every paper's rendered tables and figures beside the
published numbers, with the claim verdicts first (osfl.reporting.book); reads only committed reports."""
from __future__ import annotations

from ..reporting.book import main

if __name__ == "__main__":
    main()
