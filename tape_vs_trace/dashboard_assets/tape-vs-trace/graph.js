/* tape-vs-trace (tape_vs_trace/graph_defaults.py): a graph opened without a selection gets the one publish chose
   (window.tvtGraphDefaults: one machine, the framework and mode axes whole), written into the address so that
   asv's buttons change it from there; and the legend stands in a column beside the plot, not over it.
   Loaded after asv.js and before graphdisplay.js, whose page it wraps. */
$(document).ready(function () {
    var defaults = window.tvtGraphDefaults || {};
    var register = $.asv.register_page;
    $.asv.register_page = function (name, show) {
        if (name !== 'graphdisplay') {
            return register(name, show);
        }
        return register(name, function (params) {
            var chosen = defaults[params.benchmark];
            if (chosen && Object.keys(params).length === 1) {  // the benchmark's name alone: no selection
                $.each(chosen, function (key, values) { params[key] = values; });
                history.replaceState(null, '', $.asv.format_hash_string(
                    {location: [params.benchmark], params: chosen}));
            }
            return show(params);
        });
    };
    var plot = $.plot;
    $.plot = function (placeholder, data, options) {
        if ($(placeholder).attr('id') === 'main-graph') {
            var box = $('#tvt-legend');
            if (!box.length) {
                box = $('<div id="tvt-legend"></div>').css({position: 'absolute', top: '48px', right: 0,
                    width: '260px', bottom: '100px', overflowY: 'auto', fontSize: '12px'});
                $(placeholder).parent().css('right', '270px').after(box);
            }
            box.empty();  // flot leaves a container alone when the legend is switched off
            options = $.extend(true, {}, options, {legend: {container: box}});
        }
        return plot(placeholder, data, options);
    };
    $.extend($.plot, plot);
});
