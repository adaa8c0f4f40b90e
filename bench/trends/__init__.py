"""Paper-trends benchmark: the papers' comparisons rerun on the simulator, claim by claim.

Each experiment runs the comparison one of the papers reports (Hong et al. PPoPP 2011, Fig. 7-8;
Cheng et al., Fig. 5-6; Nasre et al. IPDPS 2013, Fig. 5, 8, 9, 11, 12; the WER slides) on
graphs shaped like the paper's, and turns it into rows: the experiment, the paper's claim, the
simulator's figure, a verdict (``agree`` or ``disagree``) computed from the simulator's numbers
against the claim's direction, and a note. A disagreeing row's note names a plausible modelling
reason; nothing here tunes the simulator or fixes a verdict in advance.

One module per paper (``hong``, ``cheng``, ``nasre``, ``wer``), each naming the claims it
tests; ``common`` holds what they share. Run ``python bench/paper_trends.py [--quick]`` or
``warpsweep bench trends [--quick]``.
"""
