"""The CI regression gate: result rows against a baseline (:mod:`.baseline`), cell by cell and in
aggregate (:mod:`.check`), its findings rendered as text, Markdown and JUnit (:mod:`.check_report`)."""
