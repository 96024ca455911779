"""Tests of the tempo model's package: python3 -m unittest discover -s scripts/tempo-model/tests"""
import json
import math
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tempomodel import data, level, model, scaled  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class BeatTracking(unittest.TestCase):
    def test_dp_finds_a_click_train(self):
        E = np.zeros(3000); E[17::50] = 5.0
        beats, _ = level.dp_beats(E, 50.0)
        self.assertGreater(len(beats), 55)
        self.assertTrue(all((b - 17) % 50 == 0 for b in beats))

    def test_beat_features_prefer_the_true_period(self):
        E = np.zeros(3000); E[::40] = 1.0; E[20::40] = 0.2   # beats and weaker off-beats
        at_beat = level.beat_features(E, E, E + 1e-3, 40.0, level.FR * 60 / 40)
        at_double = level.beat_features(E, E, E + 1e-3, 20.0, level.FR * 60 / 20)
        self.assertGreater(at_beat['eb'], at_beat['eo'])
        self.assertLess(at_double['eb'] - at_double['eo'], at_beat['eb'] - at_beat['eo'])


class Fitting(unittest.TestCase):
    def items(self, n, rng):
        out = []
        for _ in range(n):
            X = rng.normal(size=(5, 3)); right = rng.integers(5)
            X[right, 0] += 2.0                                 # feature 0 marks the right candidate
            y = np.zeros(5); y[right] = 1
            out.append(dict(X=X, y=y))
        return out

    def test_conditional_logit_learns_the_marking_feature(self):
        rng = np.random.default_rng(1)
        w = level.fit_clogit(self.items(300, rng), 'X', 0.3)
        self.assertGreater(w[0], 2 * max(abs(w[1]), abs(w[2])))
        test = self.items(200, rng)
        accuracy = np.mean([it['y'][int(np.argmax(it['X'] @ w))] for it in test])
        self.assertGreater(accuracy, 0.8)

    def test_threshold_lies_between_beatless_and_tempo(self):
        line, how = data.threshold([1.0, 2.0], [4.0, 5.0], 0, '')
        self.assertEqual((line, how), (3.0, 'separable'))
        line, how = data.threshold([1.0, 4.5], [4.0, 5.0, 6.0], 0, '')
        self.assertTrue(4.5 < line <= 5.0 or 1.0 < line <= 4.0, line)


class ModelFile(unittest.TestCase):
    def test_the_shipped_file_names_every_feature(self):
        m = model.read(os.path.join(ROOT, model.SWIFT_PATH))
        self.assertEqual(set(m.weights), set(model.FEATURES))
        self.assertEqual(len(m.vector()), len(model.FEATURES))

    def test_round_trip_and_refusals(self):
        m = model.read(os.path.join(ROOT, model.SWIFT_PATH))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'M.swift')
            m.provenance = 'line one\nline two'
            m.write_swift(path)
            again = model.read(path)
            self.assertEqual((again.weights, again.level_only, again.thresholds), (m.weights, m.level_only, m.thresholds))
            self.assertEqual(again.provenance, 'line one\nline two')
        with self.assertRaises(ValueError):
            model.Model(dict(m.weights, onsetDensity=1.0), m.level_only, m.thresholds)
        weights = dict(m.weights); del weights['bar3']
        with self.assertRaises(ValueError):
            model.Model(weights, m.level_only, m.thresholds)


class ScaledCopies(unittest.TestCase):
    def test_targets_fill_the_other_bins(self):
        edges = scaled.bin_edges()
        for bpm in (70.0, 120.0, 190.0, 40.0, 250.0):
            ts = scaled.targets(bpm, 7)
            self.assertEqual(ts, scaled.targets(bpm, 7))
            bins = [next(k for k in range(scaled.BINS) if edges[k] <= t <= edges[k + 1]) for t in ts]
            self.assertEqual(len(set(bins)), len(bins))
            self.assertEqual(len(ts), 4)
            own = [k for k in range(scaled.BINS) if edges[k] <= bpm < edges[k + 1]]
            self.assertFalse(set(own) & set(bins))

    def test_scaled_midi_moves_every_note(self):
        import mido
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, 'a.mid'), os.path.join(d, 'b.mid')
            mid = mido.MidiFile(ticks_per_beat=480)
            track = mido.MidiTrack(); mid.tracks.append(track)
            track.append(mido.MetaMessage('set_tempo', tempo=500000, time=0))   # 120 BPM
            for _ in range(400):                                                 # 200 s of quarter notes
                track.append(mido.Message('note_on', note=60, velocity=90, time=0))
                track.append(mido.Message('note_off', note=60, velocity=0, time=480))
            mid.save(src)
            scaled.scaled_midi(src, dst, 1.5)                                    # 180 BPM
            out = mido.MidiFile(dst)
            t, onsets = 0.0, []
            for msg in out:
                t += msg.time
                if msg.type == 'note_on' and msg.velocity > 0: onsets.append(t)
            self.assertAlmostEqual(onsets[1] - onsets[0], 60 / 180, places=4)
            self.assertLessEqual(onsets[-1], scaled.EXCERPT_S)
            self.assertGreater(onsets[-1], scaled.EXCERPT_S - 0.5)


class Folds(unittest.TestCase):
    def test_a_scaled_copy_falls_in_its_songs_fold(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, 'modtempo')); os.makedirs(os.path.join(d, 'modscaled'))
            json.dump(dict(tracks={'x.wav': dict(bpm=125, package='pkg')}), open(os.path.join(d, 'modtempo', 'truth.json'), 'w'))
            json.dump(dict(tracks={'x@80.wav': dict(bpm=80, package='pkg', original='x.wav')}),
                      open(os.path.join(d, 'modscaled', 'truth.json'), 'w'))
            tracks = data.track_list(d, os.path.join(d, 'cache'))
            self.assertEqual({t.source for t in tracks}, {'mod:pkg'})
            self.assertEqual(sorted(t.set for t in tracks), ['modules', 'modules-scaled'])


if __name__ == '__main__':
    unittest.main()
